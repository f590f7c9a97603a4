import net from "node:net";
import { Transform } from "node:stream";

export interface TcpProxyOptions {
  targetHost: string;
  targetPort: number;
  /** 0 (the default) picks a free port. The proxy listens on 127.0.0.1 only. */
  listenPort?: number;
}

export interface TcpProxy {
  readonly port: number;
  /** Rewrites the host:port of a postgres:// or redis:// URL to 127.0.0.1:<proxy port>; the rest is kept. */
  url(template: string): string;
  /** Resets every open connection and, until restore(), every new one: clients fail fast, never hang. */
  cut(): void;
  restore(): void;
  /**
   * Arms a one-shot trap for "the connection broke after the server acted": the first client-to-server
   * chunk `match` accepts (say, a COMMIT) is forwarded, the server's answer to it is dropped, and that
   * connection is reset. The server did the work; the client never hears. Resolves once it has sprung.
   */
  cutAfterRequest(match: (chunk: Buffer) => boolean): Promise<void>;
  /** Open client connections (each with its upstream). */
  connections(): number;
  /** Resets every connection and stops listening; safe to call twice. */
  close(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
}

/**
 * A TCP proxy for fault tests: point the process under test at `proxy.url(databaseUrl)`, then cut()
 * to take Postgres or Redis away from it and restore() to give it back. Uses node:net only.
 */
export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const { targetHost, targetPort, listenPort = 0 } = options;
  const pairs = new Set<Pair>();
  let isCut = false;
  let trap: { match: (chunk: Buffer) => boolean; sprung: () => void } | null = null;

  // allowHalfOpen on both sides so a client's FIN is forwarded as a FIN rather than closing the whole
  // pair before the target's reply has come back; a pair is torn down only once a side is fully closed.
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    client.on("error", () => {});
    if (isCut) {
      reset(client);
      return;
    }
    const upstream = net.connect({ host: targetHost, port: targetPort, allowHalfOpen: true });
    const pair: Pair = { client, upstream };
    pairs.add(pair);
    const teardown = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    // Errors (a refused upstream, a reset client, a write after cut) end the pair; they are never thrown.
    client.on("error", teardown);
    upstream.on("error", teardown);
    client.on("close", teardown);
    upstream.on("close", teardown);
    // Both directions pass through a Transform so a trap can see requests and drop the answer to one.
    let trapped: (() => void) | null = null;
    const toServer = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        if (trap && trapped === null && trap.match(chunk)) {
          trapped = trap.sprung;
          trap = null;
        }
        done(null, chunk);
      },
    });
    const toClient = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        if (trapped === null) return done(null, chunk);
        // The server has answered the trapped request: it acted. Drop the answer and reset the client.
        const sprung = trapped;
        pairs.delete(pair);
        reset(client);
        upstream.destroy();
        sprung();
        done();
      },
    });
    client.pipe(toServer).pipe(upstream);
    upstream.pipe(toClient).pipe(client);
  });
  // After listen succeeded the server has nothing useful to report; an unhandled 'error' would crash the test.
  const listenError = new Promise<never>((_, reject) => server.once("error", reject));
  await Promise.race([new Promise<void>((resolve) => server.listen(listenPort, "127.0.0.1", resolve)), listenError]);
  server.on("error", () => {});
  listenError.catch(() => {});

  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("tcp proxy: server has no TCP address");
  const port = address.port;

  const resetAll = (): void => {
    for (const pair of pairs) {
      pairs.delete(pair);
      reset(pair.client);
      pair.upstream.destroy();
    }
  };

  return {
    port,
    url(template) {
      const url = new URL(template);
      if (url.hostname === "") throw new Error(`tcp proxy: ${JSON.stringify(template)} has no host to replace`);
      url.hostname = "127.0.0.1";
      url.port = String(port);
      return url.toString();
    },
    cut() {
      isCut = true;
      resetAll();
    },
    restore() {
      isCut = false;
    },
    cutAfterRequest(match) {
      return new Promise<void>((resolve) => {
        trap = { match, sprung: resolve };
      });
    },
    connections: () => pairs.size,
    async close() {
      isCut = true;
      resetAll();
      if (!server.listening) return;
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** An RST rather than a FIN: the client sees ECONNRESET at once, a fast failure rather than a clean end or a hang. */
function reset(socket: net.Socket): void {
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}
