// Hostile input against the worker gateway over raw sockets: random bytes, deep nesting, huge
// frames, floods and connection storms. After each, the gateway process must still be alive,
// /healthz must answer 200 and a normal worker must still get a submitted task assigned.
import crypto from 'node:crypto';
import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RowDataPacket } from 'mysql2/promise';
import { newTenant } from './support/db.js';
import { useGatewayFixture } from './support/fixture.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { expectServing } from './support/serving.js';
import { submitTask } from './support/submit.js';
import type { CredentialsFile } from '../server/admin/bootstrap.js';
import { newId } from '../server/ids.js';
import { waitForValue } from './support/wait.js';

const HELLO_TIMEOUT_MS = 1000;

/** Tenant of the health probe worker (its tasks are never visible to hostile sessions). */
let probe: CredentialsFile;

/** f.t: the tenant the hostile clients use. */
const f = useGatewayFixture({ gatewayEnv: { ORBIT_HELLO_TIMEOUT_MS: String(HELLO_TIMEOUT_MS) } });
beforeAll(async () => {
  probe = await newTenant(f.db);
});

const submit = (tenant: CredentialsFile) => submitTask(f.gw.url, tenant);
const expectHealthy = () => expectServing(f.gw, probe);

async function inBatches<T>(items: T[], size: number, fn: (x: T, i: number) => Promise<void>) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map((x, j) => fn(x, i + j)));
}

/** Collects every frame a raw worker gets until it closes. */
async function drainUntilClosed(w: RawWorker): Promise<{ code: number; frames: any[] }> {
  const { code } = await w.closed;
  return { code, frames: w.frames };
}

function wsUrl() {
  return f.gw.url.replace(/^http/, 'ws') + '/v1/workers/connect';
}

describe('hostile input', () => {
  it('gateway is healthy at the start', async () => {
    await expectHealthy();
  });

  it('200 random-byte text frames on fresh connections (before and after hello)', async () => {
    const codes = new Map<number, number>();
    await inBatches(
      Array.from({ length: 200 }, (_, i) => i),
      25,
      async (i) => {
        const w = await openRaw(f.gw.url, f.t.token);
        if (i % 2 === 1) {
          w.send(hello([f.t.queue_id], { capacity: 0 }));
          await w.next('hello.ok');
        }
        const bytes = crypto.randomBytes(1 + crypto.randomInt(4096));
        // Half raw bytes (mostly invalid UTF-8), half printable JSON-ish noise (valid UTF-8).
        const data = i % 4 < 2 ? bytes : Buffer.from([...bytes].map((b) => '{}[]":,0123456789abcdefnulltrue \\'.charCodeAt(b % 31)));
        w.sendRaw(data, false);
        const { code, frames } = await drainUntilClosed(w);
        codes.set(code, (codes.get(code) ?? 0) + 1);
        // Invalid UTF-8 too is a protocol error (docs/worker-protocol.md): the error frame, then 1002 —
        // never ws's bare 1007 (hostile-regressions.test.ts).
        expect(code, `frame ${i}`).toBe(1002);
        expect(frames, `frame ${i}`).toEqual([{ type: 'error', code: 'PROTOCOL_ERROR', message: expect.any(String), fatal: true }]);
      },
    );
    expect(Object.fromEntries(codes)).toEqual({ 1002: 200 });
    await expectHealthy();
  });

  it('mutated hellos: every field replaced by every wrong-typed junk value', async () => {
    const junk: unknown[] = [null, -1, 1e308, '', 'x'.repeat(100), [], [null], {}, { a: { b: [1] } }, true, 'true'];
    const fields = ['type', 'protocol', 'worker_id', 'queues', 'capacity', 'concurrency_keys', 'handlers', 'resume', 'agent'];
    // Combinations that happen to be valid.
    const valid = (f: string, v: unknown) =>
      (f === 'concurrency_keys' && v === true) ||
      (f === 'resume' && Array.isArray(v) && v.length === 0) ||
      ((f === 'worker_id' || f === 'agent') && v === 'true');
    const cases = fields.flatMap((f) => junk.filter((v) => !valid(f, v)).map((v) => [f, v] as const));
    expect(cases.length).toBeGreaterThan(90);
    await inBatches(cases, 20, async ([field, v]) => {
      const w = await openRaw(f.gw.url, f.t.token);
      w.send(hello([f.t.queue_id], { capacity: 0, [field]: v }));
      const err = await w.next('error', 5000);
      expect(err, `${field}=${JSON.stringify(v)}`).toMatchObject({ code: 'PROTOCOL_ERROR', fatal: true });
      expect((await w.closed).code).toBe(1002);
    });
    await expectHealthy();
  });

  it('deeply nested JSON', async () => {
    const nest = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);
    const objs = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    // Before hello: in an unknown field, as the type, and as a whole frame.
    for (const text of [
      `{"type":"hello","deep":${nest(200_000)}}`,
      `{"type":${nest(100_000, '"hello"')}}`,
      nest(300_000),
      `{"type":"hello","protocol":1,"worker_id":"deep","queues":["${f.t.queue_id}"],"capacity":1,"handlers":${nest(100_000)}}`,
      `{"type":"hello","x":${objs(50_000)}}`,
    ]) {
      const w = await openRaw(f.gw.url, f.t.token);
      w.sendRaw(text);
      expect(await w.next('error')).toMatchObject({ code: 'PROTOCOL_ERROR', fatal: true });
      expect((await w.closed).code).toBe(1002);
    }
    // After hello: nested inside a frame's free-form output and inside a strict field.
    for (const text of [
      `{"type":"result","attempt_id":"${newId()}","outcome":"succeeded","output":${nest(100_000)}}`,
      `{"type":"renew","attempt_ids":${nest(100_000, `"${newId()}"`)}}`,
    ]) {
      const w = await openRaw(f.gw.url, f.t.token);
      w.send(hello([f.t.queue_id], { capacity: 0 }));
      await w.next('hello.ok');
      w.sendRaw(text);
      expect(await w.next('error')).toMatchObject({ code: 'PROTOCOL_ERROR', fatal: true });
      expect((await w.closed).code).toBe(1002);
    }
    await expectHealthy();
  });

  it('a result with output nested past 512 levels is a protocol error; the attempt is untouched and resumable', async () => {
    const tn = await newTenant(f.db);
    const workerId = `deep-${newId().slice(0, 8)}`;
    const w = await openRaw(f.gw.url, tn.token);
    w.send(hello([tn.queue_id], { worker_id: workerId, capacity: 1 }));
    await w.next('hello.ok');
    const task = await submit(tn);
    const a = await w.next('task.assign');
    expect(a.task.id).toBe(task.id);
    w.send({ type: 'start', attempt_id: a.attempt_id });
    await w.next('start.ok');
    // The frame is level 1, output level 2: 511 levels of output is the deepest accepted frame.
    const result = (depth: number) =>
      `{"type":"result","attempt_id":"${a.attempt_id}","outcome":"succeeded","output":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    w.sendRaw(result(512));
    expect(await w.next('error')).toMatchObject({ type: 'error', code: 'PROTOCOL_ERROR', fatal: true });
    expect((await w.closed).code).toBe(1002);
    const [rows] = await f.db.pool.query<RowDataPacket[]>('SELECT state FROM attempts WHERE id = ?', [a.attempt_id]);
    expect(rows[0]!.state).toBe('RUNNING');
    // Same worker reconnects, resumes and finishes with the deepest accepted output.
    const w2 = await openRaw(f.gw.url, tn.token);
    w2.send(hello([tn.queue_id], { worker_id: workerId, capacity: 1, resume: [a.attempt_id] }));
    const ok = await w2.next('hello.ok');
    expect(ok.resumed.map((r: any) => r.attempt_id)).toEqual([a.attempt_id]);
    w2.sendRaw(result(511));
    expect((await w2.next('result.ok')).task_state).toBe('SUCCEEDED');
    w2.close();
    await expectHealthy();
  });

  // Deep objects (not arrays), far past the stack depth of a recursive walk, under the frame limit.
  it('150 000 nested objects in an output → PROTOCOL_ERROR, 1002', async () => {
    const w = await openRaw(f.gw.url, f.t.token);
    w.send(hello([f.t.queue_id], { capacity: 0 }));
    await w.next('hello.ok');
    w.sendRaw(`{"type":"result","attempt_id":"${newId()}","outcome":"unknown","output":${'{"a":'.repeat(150_000)}1${'}'.repeat(150_000)}}`);
    expect(await w.next('error')).toMatchObject({ code: 'PROTOCOL_ERROR', fatal: true });
    expect((await w.closed).code).toBe(1002);
    await expectHealthy();
  });

  it('a 5 MB frame → 1009 (text before and after hello, and binary)', async () => {
    const big = 'x'.repeat(5 * 1024 * 1024);
    const w1 = await openRaw(f.gw.url, f.t.token);
    w1.sendRaw(big);
    expect((await w1.closed).code).toBe(1009);

    const w2 = await openRaw(f.gw.url, f.t.token);
    w2.send(hello([f.t.queue_id], { capacity: 0 }));
    await w2.next('hello.ok');
    w2.sendRaw(JSON.stringify({ type: 'result', attempt_id: newId(), outcome: 'succeeded', output: big }));
    expect((await w2.closed).code).toBe(1009);

    const w3 = await openRaw(f.gw.url, f.t.token);
    w3.sendRaw(Buffer.alloc(5 * 1024 * 1024), true);
    expect((await w3.closed).code).toBe(1009);
    await expectHealthy();
  });

  it('1000 frames flooded before hello → one PROTOCOL_ERROR, 1002', async () => {
    for (const make of [
      (i: number) => JSON.stringify({ type: 'start', attempt_id: `a${i}` }),
      (i: number) => `garbage ${i}`,
      // A valid hello followed by 999 more: the second one is the violation.
      () => JSON.stringify(hello([f.t.queue_id], { worker_id: 'flooder', capacity: 0 })),
    ]) {
      const w = await openRaw(f.gw.url, f.t.token);
      for (let i = 0; i < 1000; i++) w.sendRaw(make(i));
      const { code, frames } = await drainUntilClosed(w);
      expect(code).toBe(1002);
      // The first hello's transaction may commit before the second hello is read (then hello.ok
      // comes first); either way exactly one fatal PROTOCOL_ERROR ends the session.
      const errors = frames.filter((x: { type: string }) => x.type !== 'hello.ok');
      expect(frames.length - errors.length).toBeLessThanOrEqual(1);
      expect(errors).toEqual([{ type: 'error', code: 'PROTOCOL_ERROR', message: expect.any(String), fatal: true }]);
    }
    // The hello flood leaves no OPEN session row behind. The socket closes at once; a hello whose
    // transaction commits after that closes its row right after (onHello), so this is a matter of
    // milliseconds, not of the session staying open.
    const open = async () => (await f.db.pool.query<RowDataPacket[]>(`SELECT id FROM worker_sessions WHERE worker_id = 'flooder' AND state = 'OPEN'`))[0];
    expect(await waitForValue(open, (rows) => rows.length === 0, { timeout: 5_000 })).toEqual([]);
    await expectHealthy();
  });

  it('1000 per-attempt frames flooded after hello: 1000 non-fatal errors, session keeps working', async () => {
    const tn = await newTenant(f.db);
    const w = await openRaw(f.gw.url, tn.token);
    w.send(hello([tn.queue_id], { capacity: 0 }));
    await w.next('hello.ok');
    for (let i = 0; i < 1000; i++) w.send({ type: i % 2 ? 'start' : 'result', attempt_id: `bogus-${i}`, ...(i % 2 ? {} : { outcome: 'succeeded' }) });
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const e = await w.next('error');
      expect(e).toMatchObject({ code: 'NOT_FOUND', fatal: false });
      seen.add(e.attempt_id);
    }
    expect(seen.size).toBe(1000);
    w.send({ type: 'capacity', capacity: 1 });
    const task = await submit(tn);
    expect((await w.next('task.assign')).task.id).toBe(task.id);
    w.close();
    await expectHealthy();
  });

  it('connection storm: 100 sockets opened and dropped without hello', async () => {
    await inBatches(
      Array.from({ length: 100 }, (_, i) => i),
      50,
      async (i) => {
        const w = await openRaw(f.gw.url, f.t.token);
        if (i % 2) w.ws.terminate();
        else w.close();
        await w.closed;
      },
    );
    await expectHealthy();
  });

  it('connection storm: 100 sockets that never say hello are closed by the hello timer', async () => {
    const ws = await Promise.all(Array.from({ length: 100 }, () => openRaw(f.gw.url, f.t.token)));
    const results = await Promise.all(ws.map((w) => drainUntilClosed(w)));
    for (const r of results) {
      expect(r.code).toBe(1002);
      expect(r.frames).toEqual([{ type: 'error', code: 'PROTOCOL_ERROR', message: expect.any(String), fatal: true }]);
    }
    await expectHealthy();
  });

  it('connection storm: 100 handshakes aborted mid-upgrade (raw TCP)', async () => {
    const { hostname, port } = new URL(f.gw.url);
    await inBatches(
      Array.from({ length: 100 }, (_, i) => i),
      50,
      async (i) => {
        const sock = net.connect(Number(port), hostname);
        await new Promise<void>((r, j) => sock.once('connect', () => r()).once('error', j));
        const token = i % 3 === 0 ? 'orb_' + 'x'.repeat(43) : f.t.token; // some with an unknown token
        sock.write(
          `GET /v1/workers/connect HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
            `Sec-WebSocket-Protocol: orbit.worker.v1\r\nAuthorization: Bearer ${token}\r\n\r\n`,
        );
        sock.on('error', () => {});
        if (i % 2) sock.destroy();
        else sock.end();
      },
    );
    await expectHealthy();
  });

  it('connection storm: 100 sessions dropped right after sending hello leave no OPEN session rows', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => `storm-${i}`);
    await inBatches(ids, 50, async (id, i) => {
      const ws = new WebSocket(wsUrl(), ['orbit.worker.v1'], { headers: { authorization: `Bearer ${f.t.token}` } });
      await new Promise((r, j) => ws.once('open', r).once('error', j));
      ws.send(JSON.stringify(hello([f.t.queue_id], { worker_id: id, capacity: 0 })));
      if (i % 2) ws.terminate();
      else ws.close(1000);
      await new Promise((r) => ws.once('close', r));
    });
    const openSessions = async () =>
      (await f.db.pool.query<RowDataPacket[]>(`SELECT worker_id FROM worker_sessions WHERE worker_id LIKE 'storm-%' AND state <> 'CLOSED'`))[0];
    const open = await waitForValue(openSessions, (rows) => rows.length === 0, { timeout: 10_000, interval: 50 });
    expect(open).toEqual([]);
    await expectHealthy();
  });
});
