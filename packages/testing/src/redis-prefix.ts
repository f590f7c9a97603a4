import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";

export interface TestRedis {
  url: string;
  /** Every key the code under test writes starts with this, so parallel tests never collide. */
  prefix: string;
  /** Deletes every key under the prefix. */
  cleanup(): Promise<void>;
}

export function testRedisUrl(): string {
  return process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
}

export function createTestRedis(url = testRedisUrl()): TestRedis {
  const prefix = `tick-test:${randomBytes(5).toString("hex")}`;
  return {
    url,
    prefix,
    cleanup: async () => {
      const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await redis.connect();
        let cursor = "0";
        do {
          const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
          cursor = next;
          if (keys.length) await redis.del(...keys);
        } while (cursor !== "0");
      } finally {
        redis.disconnect();
      }
    },
  };
}
