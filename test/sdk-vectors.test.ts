// The shared conformance vectors (protocol/vectors/) through the Node SDK's real decoder and
// checks: the frames the gateway sends (parseGatewayFrame, then assignProblem / helloOkProblem
// with the vector's session), and the frames a worker sends (the gateway's parseWorkerFrame and
// the SDK's outgoing check). The Go SDK reads the same files (worker-sdk-go/vectors_test.go), so
// the two SDKs cannot drift apart without one of them failing.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseGatewayFrame, parseWorkerFrame, WORKER_FRAMES, type WorkerFrame } from '@orbit/protocol/frames';
import { assignProblem, helloOkProblem, outgoingProblem, type KnownAttempt } from '../worker-sdk/frame-checks.js';
import { packageRoot } from '../server/paths.js';

interface Session {
  worker_id: string;
  concurrency_keys: boolean;
  known?: Record<string, { concurrency_key?: string; concurrency_token?: string }>;
}
interface GatewayVector {
  name: string;
  session: Session;
  frame: string;
  expect: { ok: true; type: string; concurrency_token?: string } | { ok: false; stage: 'schema' | 'check'; code: string; close: number; message?: string };
}
interface WorkerVector {
  name: string;
  frame: string;
  expect: { ok: boolean; code?: string; sdk_code?: string };
}

function load<T>(file: string): T[] {
  const doc = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'protocol/vectors', file), 'utf8')) as { vectors: T[] };
  return doc.vectors;
}

function knownMap(s: Session): Map<string, KnownAttempt> {
  const m = new Map<string, KnownAttempt>();
  for (const [id, k] of Object.entries(s.known ?? {})) m.set(id, { concurrencyKey: k.concurrency_key, concurrencyToken: k.concurrency_token });
  return m;
}

/** What the Node SDK does with one gateway frame: what the connection (connection.ts) decides. */
function outcome(v: GatewayVector): { ok: true; type: string; token?: bigint } | { ok: false; stage: 'schema' | 'check'; message: string } {
  const parsed = parseGatewayFrame(v.frame);
  if (!parsed.ok) return { ok: false, stage: 'schema', message: parsed.message };
  const f = parsed.frame;
  const known = knownMap(v.session);
  if (f.type === 'task.assign') {
    const p = assignProblem(f, v.session.concurrency_keys, known.get(f.attempt_id));
    if (p) return { ok: false, stage: 'check', message: p };
    return { ok: true, type: f.type, token: f.concurrency_token === undefined ? undefined : BigInt(f.concurrency_token) };
  }
  if (f.type === 'hello.ok') {
    const p = helloOkProblem(f, v.session.worker_id, known);
    if (p) return { ok: false, stage: 'check', message: p.message };
  }
  return { ok: true, type: f.type };
}

const gatewayVectors = load<GatewayVector>('gateway-frames.json');
const workerVectors = load<WorkerVector>('worker-frames.json');

describe('shared vectors: gateway → worker frames through the Node SDK', () => {
  it('cover every gateway frame type and every SDK refusal of docs/worker-protocol.md', () => {
    const types = new Set(gatewayVectors.filter((v) => v.expect.ok).map((v) => (v.expect as { type: string }).type));
    expect([...types].sort()).toEqual(['drain.ok', 'error', 'goaway', 'hello.ok', 'renew.ok', 'result.ok', 'start.ok', 'task.assign', 'task.cancel']);
    const messages = new Set(gatewayVectors.map((v) => (v.expect.ok ? undefined : v.expect.message)).filter(Boolean));
    for (const m of [
      'task.assign has a concurrency_key but no concurrency_token',
      'task.assign has a concurrency_token but no concurrency_key',
      'concurrency_token is not a non-zero uint64 decimal',
      'keyed task assigned to a session that did not declare concurrency_keys',
      'repeated task.assign for an attempt with a different concurrency_key or concurrency_token',
    ]) {
      expect(messages.has(m), m).toBe(true);
    }
  });

  it.each(gatewayVectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
    const got = outcome(v);
    if (v.expect.ok) {
      expect(got).toMatchObject({ ok: true, type: v.expect.type });
      if (v.expect.concurrency_token !== undefined) {
        // Exact: the bigint the handler gets reads back as the very decimal string of the frame.
        expect((got as { token?: bigint }).token?.toString()).toBe(v.expect.concurrency_token);
      }
      return;
    }
    expect(v.expect.code).toBe('PROTOCOL_ERROR');
    expect(v.expect.close).toBe(1002);
    expect(got.ok).toBe(false);
    expect((got as { stage: string }).stage).toBe(v.expect.stage);
    if (v.expect.message !== undefined) expect((got as { message: string }).message).toBe(v.expect.message);
  });
});

describe('shared vectors: worker → gateway frames', () => {
  it.each(workerVectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
    // The gateway's decoder is what the gateway accepts.
    const parsed = parseWorkerFrame(v.frame);
    expect(parsed.ok, parsed.ok ? '' : parsed.message).toBe(v.expect.ok);
    if (!v.expect.ok) {
      expect(v.expect.code).toBe('PROTOCOL_ERROR');
      expect(v.expect.sdk_code).toBe('INVALID_ARGUMENT');
    }
    // The SDK's outgoing check agrees on every frame it could build (an object of a worker type
    // whose nesting the schema sees; the depth bound is the decoder's alone).
    let value: unknown;
    try {
      value = JSON.parse(v.frame);
    } catch {
      return;
    }
    const type = (value as { type?: unknown } | null)?.type;
    if (typeof type !== 'string' || !(type in WORKER_FRAMES) || v.name.includes('nested')) return;
    expect(outgoingProblem(value as WorkerFrame) === null, `${v.name}: ${outgoingProblem(value as WorkerFrame)}`).toBe(v.expect.ok);
  });
});
