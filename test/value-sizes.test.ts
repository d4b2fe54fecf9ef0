// Sizes as the documentation states them (docs/http-api.md "Limits"): every path that stores a client's or
// a worker's value takes the largest valid one and gives it back byte-exact, and one byte more gets
// the documented refusal with nothing changed.
//
// What the spec counts: the UTF-8 bytes of the value serialized as JSON without whitespace
// (JSON.stringify, what the gateway stores). "Byte-exact" here means the serialization of what comes
// back (HTTP, frames, deliveries) and the stored column text both equal JSON.stringify of what was
// sent. The values mix 2-, 3- and 4-byte UTF-8 with characters JSON escapes (quote, backslash,
// newline, control characters, a lone surrogate), so bytes, UTF-16 units and characters all differ.
import { beforeEach, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import {
  ERROR_CODE_MAX,
  ERROR_MESSAGE_MAX,
  HANDLER_MAX,
  MAX_HANDLER_VERSIONS,
  MAX_HELLO_HANDLERS,
  MAX_OUTPUT_BYTES,
  MAX_PAYLOAD_BYTES,
  VERSION_MAX,
} from '../protocol/limits.js';
import { useGatewayFixture } from './support/fixture.js';
import { call, ikey } from './support/http.js';
import { hello, openRaw, type RawWorker } from './support/raw-worker.js';
import { createSub, lease } from './support/events.js';
import { newSchedule, scheduleCommand, versionBody } from './support/schedules.js';
import { runMain } from './support/cli.js';
import { main as orbitAdmin } from '../server/cli/orbit-admin.js';
import { newId } from '../server/ids.js';
import { createQueue } from './support/dispatch-fixture.js';

// A hello with every handler and version it may declare is ~1.1 MB: above the default frame limit.
const f = useGatewayFixture({ gatewayEnv: { ORBIT_MAX_FRAME_BYTES: String(2 * 1024 * 1024) } });

/** Each test's own queue, so that what one test leaves waiting is never assigned in another. */
let q = '';
beforeEach(async () => {
  q = (await createQueue(f, { name: `sizes-${newId().slice(0, 12)}`, lease_seconds: 30 })).id;
});

const json = (v: unknown) => JSON.stringify(v);
const jsonBytes = (v: unknown) => Buffer.byteLength(json(v));
/** 14 UTF-16 units, 40 bytes serialized: é(2) €(3) 😀(4) "(2) \(2) LF(2) NUL(6) US(6) U+2028(3, not
 * escaped) lone surrogate(6, escaped) < > & '(1 each). */
const MIX = 'é€😀"\\\n\u0000\u001f\u2028\ud800<>&\'';

/** A nested JSON value of exactly `bytes` serialized bytes, and the same with one 'a' turned into
 * 'é': as many characters, one byte more. */
function sized(bytes: number): { exact: Record<string, unknown>; over: Record<string, unknown> } {
  const base = { k: [1, -2.5e-7, true, null, { 'ü "key"': MIX }], s: MIX.repeat(100) };
  const pad = bytes - jsonBytes({ ...base, p: '' });
  const exact = { ...base, p: 'a'.repeat(pad) };
  const over = { ...base, p: 'é' + 'a'.repeat(pad - 1) };
  expect(jsonBytes(exact)).toBe(bytes);
  expect(jsonBytes(over)).toBe(bytes + 1);
  return { exact, over };
}

const taskBody = (payload: unknown, over: Record<string, unknown> = {}) => ({
  queue_id: q,
  handler: 'h',
  handler_version: 'v1',
  payload_version: 'v1',
  payload,
  ...over,
});

async function rows(sql: string, params: unknown[] = []): Promise<RowDataPacket[]> {
  const [r] = await f.db.pool.query<RowDataPacket[]>(sql, params);
  return r;
}

/** Everything a refused value could have touched in the tenant's namespace. */
async function fingerprint(): Promise<unknown> {
  const ns = f.t.namespace_id;
  return rows(
    `SELECT (SELECT COUNT(*) FROM tasks WHERE namespace_id = ?) AS tasks,
            (SELECT COUNT(*) FROM receipts WHERE namespace_id = ?) AS receipts,
            (SELECT BIT_XOR(CRC32(CONCAT_WS('|', id, state, updated_at, COALESCE(result_output, ''), COALESCE(result_error_message, '')))) FROM tasks WHERE namespace_id = ?) AS tasks_sum,
            (SELECT BIT_XOR(CRC32(CONCAT_WS('|', id, state, lease_expires_at, COALESCE(output, ''), COALESCE(error_message, ''), COALESCE(result_reply, '')))) FROM attempts WHERE namespace_id = ?) AS attempts_sum,
            (SELECT COUNT(*) FROM result_events WHERE namespace_id = ?) AS events,
            (SELECT COUNT(*) FROM deliveries WHERE namespace_id = ?) AS deliveries,
            (SELECT COUNT(*) FROM schedule_versions WHERE namespace_id = ?) AS versions`,
    [ns, ns, ns, ns, ns, ns, ns],
  );
}

async function getTask(id: string): Promise<any> {
  const r = await call(f.gw.url, 'GET', `/v1/tasks/${id}`, { token: f.t.token });
  expect(r.status, r.text).toBe(200);
  return r.body.data.task;
}

/** The stored column text and its length in bytes (LENGTH counts bytes). */
async function stored(table: string, column: string, where: string, params: unknown[]): Promise<{ text: string; bytes: number }> {
  const [r] = await rows(`SELECT ${column} AS text, LENGTH(${column}) AS bytes FROM ${table} WHERE ${where}`, params);
  return { text: r!.text as string, bytes: Number(r!.bytes) };
}

/** A raw worker on the tenant's queue, holding the next assignment (started). */
async function workerWith(taskId: string, over: Record<string, unknown> = {}): Promise<{ w: RawWorker; assign: any }> {
  const w = await openRaw(f.gw.url, f.t.token);
  try {
    w.send(hello([q], { capacity: 1, ...over }));
    await w.next('hello.ok');
    const assign = await w.next('task.assign');
    expect(assign.task.id).toBe(taskId);
    w.send({ type: 'start', attempt_id: assign.attempt_id });
    await w.next('start.ok');
    return { w, assign };
  } catch (e) {
    w.close();
    throw e;
  }
}

describe('payloads', () => {
  it('a payload of exactly 256 KiB round-trips byte-exact (POST, batch item, GET, the row, task.assign); one byte more is 413 with nothing stored', async () => {
    const { exact, over } = sized(MAX_PAYLOAD_BYTES);
    const before = await fingerprint();
    const refused = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: taskBody(over) });
    expect(refused.status, refused.text.slice(0, 300)).toBe(413);
    expect(refused.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    const refusedItem = await call(f.gw.url, 'POST', '/v1/tasks:batch', {
      token: f.t.token,
      body: { tasks: [{ ...taskBody(over), idempotency_key: ikey('item') }] },
    });
    expect(refusedItem.status, refusedItem.text.slice(0, 300)).toBe(200);
    expect(refusedItem.body.data.results.map((x: any) => [x.status, x.error?.code])).toEqual([[413, 'PAYLOAD_TOO_LARGE']]);
    expect(await fingerprint()).toEqual(before);

    const key = ikey();
    const single = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key, body: taskBody(exact) });
    expect(single.status, single.text.slice(0, 300)).toBe(201);
    const b = await call(f.gw.url, 'POST', '/v1/tasks:batch', { token: f.t.token, body: { tasks: [{ ...taskBody(exact), idempotency_key: ikey('item') }] } });
    expect(b.status, b.text.slice(0, 300)).toBe(200);
    expect(b.body.data.results[0].status, json(b.body.data.results[0].error)).toBe(201);
    const ids = [single.body.data.task.id, b.body.data.results[0].data.task.id];
    expect(json(single.body.data.task.payload)).toBe(json(exact));
    expect(json(b.body.data.results[0].data.task.payload)).toBe(json(exact));
    for (const id of ids) {
      expect(json((await getTask(id)).payload)).toBe(json(exact));
      expect(await stored('tasks', 'payload', 'id = ?', [id])).toEqual({ text: json(exact), bytes: MAX_PAYLOAD_BYTES });
    }
    // The frozen receipt answers a replay with the same bytes.
    const replay = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key, body: taskBody(exact) });
    expect([replay.status, replay.body.data.deduplicated]).toEqual([200, true]);
    expect(json(replay.body.data.task.payload)).toBe(json(exact));
    const w = await openRaw(f.gw.url, f.t.token);
    try {
      w.send(hello([q], { capacity: 2 }));
      await w.next('hello.ok');
      const assigned = [await w.next('task.assign'), await w.next('task.assign')];
      expect(assigned.map((a) => a.task.id).sort()).toEqual([...ids].sort());
      for (const a of assigned) expect(json(a.task.payload)).toBe(json(exact));
      for (const a of assigned) w.send({ type: 'result', attempt_id: a.attempt_id, outcome: 'succeeded', output: null });
      await w.next('result.ok');
      await w.next('result.ok');
    } finally {
      w.close();
    }
  });

  it("a schedule's task template takes a payload of exactly 256 KiB (version, triggered task); one byte more is 413", async () => {
    const { exact, over } = sized(MAX_PAYLOAD_BYTES);
    const api = { url: f.gw.url, token: f.t.token };
    const before = await fingerprint();
    const refused = await call(f.gw.url, 'POST', '/v1/schedules', {
      token: f.t.token,
      key: ikey('sc'),
      body: { name: `big-${newId().slice(0, 8)}`, paused: true, version: versionBody(q, {}, { payload: over }) },
    });
    expect(refused.status, refused.text.slice(0, 300)).toBe(413);
    expect(refused.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await fingerprint()).toEqual(before);

    const { schedule, version } = await newSchedule(api, q, {}, { payload: exact }, true);
    expect(json(version.task.payload)).toBe(json(exact));
    const t = await scheduleCommand(api, schedule.id, 'trigger', {});
    expect(t.status, t.text.slice(0, 300)).toBe(201);
    const task = t.body.data.task;
    expect(json((await getTask(task.id)).payload)).toBe(json(exact));
    expect(await stored('tasks', 'payload', 'id = ?', [task.id])).toEqual({ text: json(exact), bytes: MAX_PAYLOAD_BYTES });
    await call(f.gw.url, 'POST', `/v1/tasks/${task.id}:cancel`, { token: f.t.token, key: ikey(), body: { reason: 'done' } });
  });
});

describe('result outputs', () => {
  it('an output of exactly 256 KiB is stored and read back byte-exact (task, attempt, event, delivery); one byte more is PAYLOAD_TOO_LARGE for that attempt, nothing changed', async () => {
    const { exact, over } = sized(MAX_OUTPUT_BYTES);
    const sub = await createSub(f.gw.url, f.t.token, { name: `out-${newId().slice(0, 8)}`, queue_id: q, event_types: ['task.succeeded'] });
    const submitted = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: taskBody({ n: 1 }) });
    expect(submitted.status).toBe(201);
    const taskId = submitted.body.data.task.id;
    const { w, assign } = await workerWith(taskId);
    try {
      const before = await fingerprint();
      w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'succeeded', output: over });
      expect(await w.next('error')).toMatchObject({ type: 'error', code: 'PAYLOAD_TOO_LARGE', attempt_id: assign.attempt_id, fatal: false });
      expect(await fingerprint()).toEqual(before);
      expect((await getTask(taskId)).state).toBe('RUNNING');

      w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'succeeded', output: exact });
      expect(await w.next('result.ok')).toMatchObject({ attempt_id: assign.attempt_id, deduplicated: false, task_state: 'SUCCEEDED' });
      // The same result again is recognized from its stored fingerprint.
      w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'succeeded', output: exact });
      expect(await w.next('result.ok')).toMatchObject({ attempt_id: assign.attempt_id, deduplicated: true });
    } finally {
      w.close();
    }
    const task = await getTask(taskId);
    expect(task.state).toBe('SUCCEEDED');
    expect(json(task.result.output)).toBe(json(exact));
    expect(await stored('tasks', 'result_output', 'id = ?', [taskId])).toEqual({ text: json(exact), bytes: MAX_OUTPUT_BYTES });
    const att = await call(f.gw.url, 'GET', `/v1/tasks/${taskId}/attempts`, { token: f.t.token });
    expect(att.body.data.attempts.map((a: any) => [a.id, a.state, a.outcome])).toEqual([[assign.attempt_id, 'SUCCEEDED', 'succeeded']]);
    // The attempt view carries no output (docs/http-api.md): its column is read directly.
    expect(await stored('attempts', 'output', 'id = ?', [assign.attempt_id])).toEqual({ text: json(exact), bytes: MAX_OUTPUT_BYTES });
    const [ev] = await rows('SELECT result FROM result_events WHERE namespace_id = ? AND task_id = ?', [f.t.namespace_id, taskId]);
    expect(json(JSON.parse(ev!.result as string).output)).toBe(json(exact));
    const delivered = await lease(f.gw.url, f.t.token, sub.id);
    expect(delivered.map((d) => [d.event.task_id, d.event.type])).toEqual([[taskId, 'task.succeeded']]);
    expect(json(delivered[0].event.result.output)).toBe(json(exact));
  });
});

describe('error messages', () => {
  // ERROR_MESSAGE_MAX and ERROR_CODE_MAX count UTF-16 units (the schemas' maxLength, as JavaScript's
  // length): astral characters count two. Whole characters only, padded with 'z' to exactly n units.
  // No lone surrogate: the message columns hold UTF-8 text, which cannot carry one (it is stored as
  // U+FFFD today, while the event's JSON keeps the escape).
  const text = (n: number, chars = MIX.replace('\ud800', '')) => {
    let s = '';
    for (let i = 0; ; i++) {
      const c = [...chars][i % [...chars].length]!;
      if (s.length + c.length > n) return s.padEnd(n, 'z');
      s += c;
    }
  };

  it('a result error of the longest code and message round-trips (task, attempt, event, delivery); one unit more is a fatal PROTOCOL_ERROR with nothing changed', async () => {
    const message = text(ERROR_MESSAGE_MAX);
    const code = text(ERROR_CODE_MAX, 'É😀"\\<');
    expect([message.length, code.length]).toEqual([ERROR_MESSAGE_MAX, ERROR_CODE_MAX]);
    const sub = await createSub(f.gw.url, f.t.token, { name: `err-${newId().slice(0, 8)}`, queue_id: q, event_types: ['task.failed'] });
    const submitted = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: taskBody({ n: 2 }) });
    const taskId = submitted.body.data.task.id;
    const workerId = `sizes-${newId().slice(0, 8)}`;
    const { w, assign } = await workerWith(taskId, { worker_id: workerId });
    // A result frame refused as a fatal PROTOCOL_ERROR (close 1002) with nothing changed; its message.
    const refusedFatally = async (raw: RawWorker, error: { code: string; message: string }): Promise<string> => {
      try {
        const before = await fingerprint();
        raw.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'failed', error });
        const err = await raw.next('error');
        expect(err).toMatchObject({ code: 'PROTOCOL_ERROR', fatal: true });
        expect((await raw.closed).code).toBe(1002);
        expect(await fingerprint()).toEqual(before);
        return err.message as string;
      } finally {
        raw.close();
      }
    };
    await refusedFatally(w, { code, message: message + 'z' });

    // Half a surrogate pair is valid JSON but no UTF-8 text: refused the same way, nothing stored
    // (a text column would have kept U+FFFD, not what was sent).
    const lone = await openRaw(f.gw.url, f.t.token);
    lone.send(hello([q], { worker_id: workerId, capacity: 0, resume: [assign.attempt_id] }));
    await lone.next('hello.ok');
    expect(await refusedFatally(lone, { code, message: 'half a pair \ud83d here' })).toMatch(/error\/message must be valid UTF-8 text \(a lone surrogate/);

    const again = await openRaw(f.gw.url, f.t.token);
    try {
      again.send(hello([q], { worker_id: workerId, capacity: 0, resume: [assign.attempt_id] }));
      expect((await again.next('hello.ok')).resumed.map((r: any) => r.attempt_id)).toEqual([assign.attempt_id]);
      again.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'failed', error: { code, message } });
      expect(await again.next('result.ok')).toMatchObject({ task_state: 'FAILED' });
    } finally {
      again.close();
    }
    const task = await getTask(taskId);
    expect(task.result.error).toEqual({ code, message });
    const att = await call(f.gw.url, 'GET', `/v1/tasks/${taskId}/attempts`, { token: f.t.token });
    expect(att.body.data.attempts[0].error).toEqual({ code, message });
    const delivered = await lease(f.gw.url, f.t.token, sub.id);
    expect(delivered.map((d) => d.event.task_id)).toEqual([taskId]);
    expect(delivered[0].event.result.error).toEqual({ code, message });
  });
});

describe('free text', () => {
  it('a reason with a lone surrogate is INVALID_ARGUMENT naming the field, nothing changed; a well-formed one is stored as sent', async () => {
    const submitted = await call(f.gw.url, 'POST', '/v1/tasks', { token: f.t.token, key: ikey(), body: taskBody({ n: 4 }) });
    const taskId = submitted.body.data.task.id;
    const before = await fingerprint();
    const bad = await call(f.gw.url, 'POST', `/v1/tasks/${taskId}:cancel`, { token: f.t.token, key: ikey(), body: { reason: 'done \udc00' } });
    expect([bad.status, bad.body.error?.code]).toEqual([400, 'INVALID_ARGUMENT']);
    expect(bad.body.error.details.violations).toEqual([{ field: 'reason', message: 'must be valid UTF-8 text (a lone surrogate cannot be stored)' }]);
    expect(await fingerprint()).toEqual(before);
    const reason = `done 😀 ${MIX.replace('\ud800', '')}`.slice(0, 200);
    const ok = await call(f.gw.url, 'POST', `/v1/tasks/${taskId}:cancel`, { token: f.t.token, key: ikey(), body: { reason } });
    expect(ok.status, ok.text).toBe(200);
    // A cancel's reason is the task's error message (stored in a text column).
    expect((await getTask(taskId)).result.error).toEqual({ code: 'CANCELLED', message: reason });
    const [row] = await rows('SELECT result_error_message FROM tasks WHERE id = ?', [taskId]);
    expect(row!.result_error_message).toBe(reason);
  });
});

describe('other stored lists', () => {
  it('a hello declaring every handler and version it may is recorded whole and filters assignments', async () => {
    const name = (i: number, max: number) => `${i}.`.padEnd(max, 'v');
    const handlers = Array.from({ length: MAX_HELLO_HANDLERS }, (_, h) => ({
      handler: name(h, HANDLER_MAX),
      versions: Array.from({ length: MAX_HANDLER_VERSIONS }, (_, v) => name(v, VERSION_MAX)),
    }));
    const last = handlers[MAX_HELLO_HANDLERS - 1]!;
    const submitted = await call(f.gw.url, 'POST', '/v1/tasks', {
      token: f.t.token,
      key: ikey(),
      body: taskBody({ n: 3 }, { handler: last.handler, handler_version: last.versions[MAX_HANDLER_VERSIONS - 1] }),
    });
    expect(submitted.status, submitted.text).toBe(201);
    const w = await openRaw(f.gw.url, f.t.token);
    try {
      w.send(hello([q], { capacity: 1, handlers }));
      const ok = await w.next('hello.ok');
      const s = await stored('worker_sessions', 'handlers', 'id = ?', [ok.session_id]);
      expect(s).toEqual({ text: json(handlers), bytes: jsonBytes(handlers) });
      expect(s.bytes).toBeGreaterThan(1024 * 1024);
      const assign = await w.next('task.assign');
      expect(assign.task.id).toBe(submitted.body.data.task.id);
      w.send({ type: 'result', attempt_id: assign.attempt_id, outcome: 'succeeded', output: null });
      await w.next('result.ok');
    } finally {
      w.close();
    }
  });

  it('a credential limited to thousands of queues stores the whole list (credential and audit record) and may use the last one', async () => {
    const ids = Array.from({ length: 3000 }, () => newId());
    await f.db.pool.query(
      `INSERT INTO queues (id, namespace_id, name, max_active_attempts, lease_seconds, retry_max_attempts, retry_initial_backoff_ms,
         retry_max_backoff_ms, retry_multiplier, created_at, updated_at)
       VALUES ${ids.map(() => '(?, ?, ?, 10, 30, 3, 1000, 60000, 2, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))').join(', ')}`,
      ids.flatMap((id, i) => [id, f.t.namespace_id, `many-${i}`]),
    );
    const r = await runMain(
      orbitAdmin,
      ['credential', 'create', '--namespace-id', f.t.namespace_id, '--scopes', 'queues:manage', '--queue-ids', ids.join(',')],
      {
        ORBIT_MYSQL_DSN: f.db.dsn,
      },
    );
    expect(r.code, r.stderr).toBe(0);
    const cred = JSON.parse(r.stdout);
    const s = await stored('credentials', 'queue_ids', 'id = ?', [cred.id]);
    expect(JSON.parse(s.text)).toEqual(ids);
    expect(s.bytes).toBeGreaterThan(65_535);
    const [audit] = await rows("SELECT details FROM audit_log WHERE action = 'credential.create' AND target_id = ?", [cred.id]);
    expect(JSON.parse(audit!.details as string).queueIds).toEqual(ids);
    const q = await call(f.gw.url, 'GET', `/v1/queues/${ids[ids.length - 1]}`, { token: cred.token });
    expect(q.status, q.text).toBe(200);
  });
});
