import net from "node:net";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { startTcpProxy } from "./tcp-proxy.js";
import { waitFor } from "./wait-for.js";

// The server the test script provides (DATABASE_URL), else the local default, as in @tick/db's testServerUrl.
const DATABASE_URL = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
// "Fails fast": well under a client's connect timeout, with room for a loaded 2-core machine.
const FAST_MS = 1000;

// Everything a test starts is stopped here, in reverse order, even when the test failed.
const cleanups: Array<() => unknown> = []; // awaited: a cleanup may return a promise
afterEach(async () => {
  for (let cleanup = cleanups.pop(); cleanup; cleanup = cleanups.pop()) await cleanup();
});

async function startEchoServer(): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as net.AddressInfo).port;
}

interface Probe {
  socket: net.Socket;
  received(): string;
  /** Resolves with the error code (or "closed") and how long after connecting the socket closed. */
  closed: Promise<{ code: string; afterMs: number }>;
}

function connect(port: number): Probe {
  const startedAt = Date.now();
  const socket = net.connect({ host: "127.0.0.1", port });
  let data = "";
  let code = "closed";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => (data += chunk));
  socket.on("error", (err: NodeJS.ErrnoException) => (code = err.code ?? err.message));
  const closed = new Promise<{ code: string; afterMs: number }>((resolve) =>
    socket.once("close", () => resolve({ code, afterMs: Date.now() - startedAt })),
  );
  cleanups.push(() => socket.destroy());
  return { socket, received: () => data, closed };
}

async function echo(probe: Probe, text: string): Promise<void> {
  const before = probe.received().length;
  probe.socket.write(text);
  await waitFor(() => probe.received().slice(before) === text, { timeoutMs: 5000, description: `echo of ${text}` });
}

async function newPgClient(url: string): Promise<{ client: pg.Client; errors: Error[] }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  const errors: Error[] = [];
  // A cut connection reports here; without a listener it would be an unhandled 'error' event.
  client.on("error", (err) => errors.push(err));
  cleanups.push(() => client.end().catch(() => {}));
  await client.connect();
  return { client, errors };
}

describe("startTcpProxy with an echo server", () => {
  it("pipes both ways, cuts open and new connections fast, and restores", async () => {
    const proxy = await startTcpProxy({ targetHost: "127.0.0.1", targetPort: await startEchoServer() });
    cleanups.push(() => proxy.close());
    expect(proxy.port).toBeGreaterThan(0);

    const first = connect(proxy.port);
    await echo(first, "hello");
    const second = connect(proxy.port);
    await echo(second, "world");
    expect(proxy.connections()).toBe(2);

    proxy.cut();
    expect(proxy.connections()).toBe(0);
    expect((await first.closed).code).toBe("ECONNRESET");
    expect((await second.closed).code).toBe("ECONNRESET");

    const refused = connect(proxy.port);
    refused.socket.write("anyone?");
    const outcome = await refused.closed;
    expect(outcome.afterMs).toBeLessThan(FAST_MS);
    expect(refused.received()).toBe("");
    expect(proxy.connections()).toBe(0);

    proxy.restore();
    const third = connect(proxy.port);
    await echo(third, "back again");
    expect(proxy.connections()).toBe(1);

    third.socket.end();
    await third.closed;
    await waitFor(() => proxy.connections() === 0, { timeoutMs: 5000, description: "pair torn down after client end" });
  });

  it("forwards a client's half-close and still delivers the reply", async () => {
    const port = await new Promise<number>((resolve) => {
      // Replies only once the request is complete (the client's FIN), like an HTTP/1.0 exchange.
      const server = net.createServer({ allowHalfOpen: true }, (socket) => {
        let request = "";
        socket.on("data", (chunk) => (request += chunk.toString()));
        socket.on("end", () => socket.end(`got ${request}`));
        socket.on("error", () => {});
      });
      server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port));
      cleanups.push(() => new Promise((r) => server.close(r)));
    });
    const proxy = await startTcpProxy({ targetHost: "127.0.0.1", targetPort: port });
    cleanups.push(() => proxy.close());

    const probe = connect(proxy.port);
    probe.socket.end("request");
    expect((await probe.closed).code).toBe("closed");
    expect(probe.received()).toBe("got request");
  });

  it("closes the client fast when the target refuses", async () => {
    // A port that was just free: listen, note it, close.
    const free = net.createServer();
    await new Promise<void>((resolve) => free.listen(0, "127.0.0.1", resolve));
    const deadPort = (free.address() as net.AddressInfo).port;
    await new Promise((resolve) => free.close(resolve));

    // The OS may hand the just-freed port to the proxy itself, which would then proxy to itself.
    let proxy = await startTcpProxy({ targetHost: "127.0.0.1", targetPort: deadPort });
    while (proxy.port === deadPort) {
      await proxy.close();
      proxy = await startTcpProxy({ targetHost: "127.0.0.1", targetPort: deadPort });
    }
    const started = proxy;
    cleanups.push(() => started.close());
    const probe = connect(proxy.port);
    expect((await probe.closed).afterMs).toBeLessThan(FAST_MS);
    expect(proxy.connections()).toBe(0);
  });

  it("listens on the requested port and refuses connections after close", async () => {
    const free = net.createServer();
    await new Promise<void>((resolve) => free.listen(0, "127.0.0.1", resolve));
    const listenPort = (free.address() as net.AddressInfo).port;
    await new Promise((resolve) => free.close(resolve));

    const proxy = await startTcpProxy({ targetHost: "127.0.0.1", targetPort: await startEchoServer(), listenPort });
    expect(proxy.port).toBe(listenPort);
    const open = connect(proxy.port);
    await echo(open, "x");

    await proxy.close();
    await proxy.close();
    expect((await open.closed).code).toBe("ECONNRESET");
    expect((await connect(listenPort).closed).code).toBe("ECONNREFUSED");
  });

  it("rejects when the listen port is taken", async () => {
    const taken = await startEchoServer();
    await expect(startTcpProxy({ targetHost: "127.0.0.1", targetPort: taken, listenPort: taken })).rejects.toThrow(
      /EADDRINUSE/,
    );
  });
});

describe("TcpProxy.url", () => {
  it.each([
    ["postgresql://postgres@127.0.0.1:5432/postgres", "postgresql://postgres@127.0.0.1:PORT/postgres"],
    ["postgres://tick:p%40ss@db.internal:6543/tick?sslmode=disable", "postgres://tick:p%40ss@127.0.0.1:PORT/tick?sslmode=disable"],
    ["postgresql://postgres@[::1]:5432/postgres", "postgresql://postgres@127.0.0.1:PORT/postgres"],
    ["redis://localhost:6379", "redis://127.0.0.1:PORT"],
    ["redis://:secret@cache:6380/2", "redis://:secret@127.0.0.1:PORT/2"],
    ["redis://cache", "redis://127.0.0.1:PORT"],
  ])("%s → %s", async (template, expected) => {
    const proxy = await startTcpProxy({ targetHost: "127.0.0.1", targetPort: 1 });
    cleanups.push(() => proxy.close());
    expect(proxy.url(template)).toBe(expected.replace("PORT", String(proxy.port)));
  });

  it("throws on a URL without a host", async () => {
    const proxy = await startTcpProxy({ targetHost: "127.0.0.1", targetPort: 1 });
    cleanups.push(() => proxy.close());
    expect(() => proxy.url("postgres:///tick")).toThrow('"postgres:///tick" has no host');
  });
});

describe("startTcpProxy in front of Postgres", () => {
  it("serves queries, cuts Postgres away fast and gives it back", async () => {
    const target = new URL(DATABASE_URL);
    const proxy = await startTcpProxy({ targetHost: target.hostname, targetPort: Number(target.port || 5432) });
    cleanups.push(() => proxy.close());
    const url = proxy.url(DATABASE_URL);

    const { client, errors } = await newPgClient(url);
    expect((await client.query<{ one: number }>("select 1 as one")).rows).toEqual([{ one: 1 }]);
    expect(proxy.connections()).toBe(1);

    proxy.cut();
    await waitFor(() => errors.length > 0, { timeoutMs: FAST_MS, description: "the open pg client to report the cut" });
    await expect(client.query("select 1")).rejects.toThrow();

    const startedAt = Date.now();
    await expect(newPgClient(url)).rejects.toThrow();
    expect(Date.now() - startedAt).toBeLessThan(FAST_MS);
    expect(proxy.connections()).toBe(0);

    proxy.restore();
    const again = await newPgClient(url);
    expect((await again.client.query<{ two: number }>("select 2 as two")).rows).toEqual([{ two: 2 }]);
    expect(again.errors).toEqual([]);
  });
});

describe("TcpProxy.cutAfterRequest", () => {
  it("lets the matched request reach the server, drops its answer and resets only that connection", async () => {
    const target = new URL(DATABASE_URL);
    const proxy = await startTcpProxy({ targetHost: target.hostname, targetPort: Number(target.port || 5432) });
    cleanups.push(() => proxy.close());
    const url = proxy.url(DATABASE_URL);
    const direct = new pg.Client({ connectionString: DATABASE_URL });
    await direct.connect();
    cleanups.push(() => direct.end());
    const table = `proxy_trap_${process.pid}_${Date.now()}`;
    await direct.query(`CREATE TABLE ${table} (n int)`);
    cleanups.push(() => direct.query(`DROP TABLE IF EXISTS ${table}`));

    const { client } = await newPgClient(url);
    await client.query("BEGIN");
    await client.query(`INSERT INTO ${table} VALUES (1)`);
    const sprung = proxy.cutAfterRequest((chunk) => chunk.includes("COMMIT"));
    await expect(client.query("COMMIT")).rejects.toThrow();
    await sprung;
    // The client heard nothing, yet the server committed.
    expect((await direct.query<{ n: number }>(`SELECT n FROM ${table}`)).rows).toEqual([{ n: 1 }]);
    // The trap was one-shot: a new connection works as before.
    const again = await newPgClient(url);
    expect((await again.client.query<{ two: number }>("select 2 as two")).rows).toEqual([{ two: 2 }]);
  });
});
