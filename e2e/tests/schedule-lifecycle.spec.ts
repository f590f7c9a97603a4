import { expect, test } from "@playwright/test";
import { startSink } from "@tick/testing";
import { createTickClient } from "@tick/client";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

test("a schedule created through the API fires its occurrences as jobs, each with its own occurrence key", async () => {
  const calls: { key: string | undefined }[] = [];
  const server = await startSink({
    respond: (req) => {
      calls.push({ key: req.idempotencyKey });
      return undefined;
    },
  });
  const port = server.port;
  let scheduleId: string | undefined;
  try {
    const created = await client.call("createSchedule", {
      body: { name: `every-2s-${Date.now()}`, cron: "*/2 * * * * *", timezone: "Europe/Paris", job: { target: { url: `http://127.0.0.1:${port}/tick` } } },
    });
    expect(created.status).toBe(201);
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    scheduleId = created.body.id;

    await expect.poll(async () => {
      const jobs = await client.call("listJobs", { query: { scheduleId: scheduleId!, status: "succeeded" } });
      return jobs.ok ? jobs.body.data.length : 0;
    }, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);

    const keys = calls.map((c) => c.key);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of keys) expect(key).toMatch(new RegExp(`^schedule:${scheduleId}:\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\+0[12]:00$`));
  } finally {
    if (scheduleId) await client.call("deleteSchedule", { params: { id: scheduleId } });
    await server.close();
  }
});
