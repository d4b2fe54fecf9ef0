// Shared helpers for the worker protocol contract tests (worker-protocol-handshake.test.ts and
// worker-protocol-session.test.ts): gateway settings, raw handshakes and sessions, fatal-error
// expectations and database probes. Each test file starts its own database and gateways.
import { expect } from 'vitest';
import WebSocket from 'ws';
import type { RowDataPacket } from 'mysql2/promise';
import type { TestDb } from './db.js';
import type { GatewayProcess } from './gateway.js';
import { hello, openRaw, type RawWorker } from './raw-worker.js';
import type { CredentialsFile } from '../../server/admin/bootstrap.js';
import { insertCredential } from '../../server/db/credentials.js';
import { hashToken, newToken, type Scope } from '../../server/admin/access.js';
import { newId } from '../../server/ids.js';

export const MAX_FRAME = 310_000;
export const HELLO_TIMEOUT_MS = 300;
export const PING_MS = 200;

/** Environment of the default gateway: default timings, small frame limit. */
export const GW_ENV = { ORBIT_MAX_FRAME_BYTES: String(MAX_FRAME) };
/** Environment of the fast gateway: short hello timeout and ping interval. */
export const FAST_ENV = { ORBIT_HELLO_TIMEOUT_MS: String(HELLO_TIMEOUT_MS), ORBIT_PING_INTERVAL_MS: String(PING_MS) };

/** Helpers bound to a test file's database and default gateway (read when called, so they can be
 * created before beforeAll has run). */
export function protocolHelpers(env: () => { db: TestDb; gw: GatewayProcess }) {
  async function credential(tenant: CredentialsFile, scopes: Scope[], queueIds: '*' | string[] = '*') {
    const token = newToken();
    const id = newId();
    await insertCredential(env().db.pool, {
      id,
      namespaceId: tenant.namespace_id,
      name: `test ${id.slice(0, 6)}`,
      tokenHash: hashToken(token),
      scopes,
      queueIds,
    });
    return { id, token };
  }

  async function attemptRow(id: string) {
    const [rows] = await env().db.pool.query<RowDataPacket[]>(
      `SELECT state, worker_id, session_id, DATE_FORMAT(lease_expires_at, '%Y-%m-%d %H:%i:%s.%f') AS lease FROM attempts WHERE id = ?`,
      [id],
    );
    return rows[0]!;
  }

  async function taskState(id: string): Promise<string> {
    const [rows] = await env().db.pool.query<RowDataPacket[]>('SELECT state FROM tasks WHERE id = ?', [id]);
    return rows[0]!.state as string;
  }

  async function sessionRow(id: string) {
    const [rows] = await env().db.pool.query<RowDataPacket[]>(
      'SELECT state, close_code, worker_id, capacity, concurrency_keys FROM worker_sessions WHERE id = ?',
      [id],
    );
    return rows[0];
  }

  return { credential, attemptRow, taskState, sessionRow };
}

/** A raw handshake that reports the HTTP refusal (status and JSON body) instead of throwing. */
export function handshake(
  url: string,
  opts: { path?: string; token?: string | null; protocols?: string[]; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    const ws = new WebSocket(url.replace(/^http/, 'ws') + (opts.path ?? '/v1/workers/connect'), opts.protocols ?? ['orbit.worker.v1'], { headers });
    ws.once('unexpected-response', (req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        req.destroy();
        let body: any = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
    });
    ws.once('open', () => {
      ws.close(1000);
      resolve({ status: 101, body: null, headers: {} });
    });
    ws.once('error', reject);
  });
}

/** Opens a session and waits for hello.ok. */
export async function session(url: string, tenant: CredentialsFile, over: Record<string, unknown> = {}): Promise<{ w: RawWorker; ok: any }> {
  const w = await openRaw(url, tenant.token);
  w.send(hello([tenant.queue_id], over));
  const ok = await w.next('hello.ok');
  return { w, ok };
}

/** The fatal error frame, then the close with `closeCode`. */
export async function expectFatal(w: RawWorker, code: string, closeCode: number) {
  const err = await w.next('error', 5000);
  expect(err).toMatchObject({ type: 'error', code, fatal: true });
  expect(typeof err.message).toBe('string');
  expect(err.attempt_id).toBeUndefined();
  const closed = await w.closed;
  expect(closed.code).toBe(closeCode);
  return err;
}

export async function expectNothing(w: RawWorker, type: string, ms = 500) {
  await expect(w.next(type, ms)).rejects.toThrow(/no .* within/);
}

export const hex32 = () => newId();
