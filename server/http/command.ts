// One mechanism for every receipt-bearing command: header and body validation, then the
// idempotent transaction (receipt row claimed first, effect, receipt completed, one commit).
import type { TSchema, Static } from '@sinclair/typebox';
import { OrbitError } from '@orbit/protocol/errors';
import { violations } from '@orbit/protocol/http-schemas';
import { IDEMPOTENCY_KEY_RE } from '@orbit/protocol/validation';
import { isDuplicateKey, transactionOn, type Conn } from '../db/pool.js';
import { commandFingerprint, replayReceipt, withKeyLock } from '../dispatch/idempotency.js';
import { claimReceipt, completeReceipt, getReceipt, type ReceiptRow } from '../db/receipts.js';
import { readJsonBody } from './body.js';
import type { Reply, RequestCtx } from './context.js';

/** Rejects query parameters (commands take none). */
export function rejectQuery(ctx: RequestCtx): void {
  if (ctx.url.search !== '' && ctx.url.search !== '?') {
    throw new OrbitError('INVALID_ARGUMENT', 'command endpoints take no query parameters', { field: 'query' });
  }
}

/** Reads and validates a body against a compiled schema: 400 with the field on violation. */
export async function readBody<T extends TSchema>(ctx: RequestCtx, schema: T): Promise<Static<T>> {
  const body = await readJsonBody(ctx.req, ctx.app.config.maxBodyBytes);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new OrbitError('INVALID_ARGUMENT', 'body must be a JSON object');
  }
  const all = violations(schema, body);
  const v = all[0];
  if (v) {
    // Every violation is listed (details.violations) so that one round trip fixes the request.
    const more = all.length > 1 ? ` (and ${all.length - 1} more: ${all.slice(1).map((x) => x.field || 'body').join(', ')})` : '';
    throw new OrbitError('INVALID_ARGUMENT', `${v.field || 'body'}: ${v.message}${more}`, { field: v.field, violations: all });
  }
  return body as Static<T>;
}

export function idempotencyKey(ctx: RequestCtx): string {
  const raw = ctx.req.headers['idempotency-key'];
  if (typeof raw !== 'string') throw new OrbitError('INVALID_ARGUMENT', 'Idempotency-Key header is required', { field: 'Idempotency-Key' });
  if (!IDEMPOTENCY_KEY_RE.test(raw)) {
    throw new OrbitError('INVALID_ARGUMENT', 'Idempotency-Key must be 1-255 visible ASCII characters', { field: 'Idempotency-Key' });
  }
  return raw;
}

export interface CommandSpec {
  /** Method + path template, e.g. `POST /v1/tasks/{id}:cancel`. */
  operation: string;
  /** Id in the path ('' for creates). */
  targetId: string;
  /** The validated body with defaults applied (fingerprinted canonically). */
  normalized: unknown;
  /** Success status of a first execution (201 create, 200 change). */
  status: 201 | 200;
  /** The effect, inside the transaction; returns response data (without `deduplicated`) and the id
   * of the resource created or changed. Throwing rolls back everything, receipt included. */
  effect: (c: Conn) => Promise<{ data: Record<string, unknown>; resourceId: string | null }>;
  /** Runs after commit (wake-ups, metrics). */
  afterCommit?: (data: Record<string, unknown>) => void;
}

function replay(row: ReceiptRow, spec: CommandSpec, fingerprint: string): Reply {
  return replayReceipt(row, spec.operation, spec.targetId, fingerprint);
}

/** The key was committed by a concurrent request while this one waited on its row lock. */
class ReceiptTaken extends Error {}

/** Executes a command exactly once per (namespace, Idempotency-Key). */
export async function runCommand(ctx: RequestCtx, key: string, spec: CommandSpec): Promise<Reply> {
  const ns = ctx.cred.namespaceId;
  const fingerprint = commandFingerprint(spec.operation, spec.targetId, spec.normalized);
  const pool = ctx.app.pool;
  // No read of the receipt first: a committed receipt makes the batched INSERT below fail at once
  // with a duplicate key, and the serialized path replays it. Replays are rare; the saved statement
  // is paid by every first execution.
  // Common path: the command joins the node's coalesced command transaction (many commands, one
  // commit). Its receipt row is claimed first under a savepoint; a key taken by a concurrent
  // command (or a deadlock among same-key waiters) falls through to the serialized path below.
  // The command inside its transaction: the receipt row first (a concurrent or committed command
  // with the same key makes it fail as ReceiptTaken), then the effect, then the frozen reply.
  const execute = async (c: Conn): Promise<Record<string, unknown>> => {
    try {
      await claimReceipt(c, { namespaceId: ns, key, operation: spec.operation, targetId: spec.targetId, fingerprint, credentialId: ctx.cred.id });
    } catch (err) {
      throw isDuplicateKey(err) ? new ReceiptTaken() : err;
    }
    const out = await spec.effect(c);
    const stored = { ...out.data, deduplicated: false };
    await completeReceipt(c, ns, key, spec.status, stored, out.resourceId);
    return stored;
  };
  const batcher = ctx.app.commandBatcher;
  if (!batcher) {
    const committed = await getReceipt(pool, ns, key);
    if (committed && committed.http_status !== 0) return replay(committed, spec, fingerprint);
  } else {
    try {
      const started = process.hrtime.bigint();
      const { value: data } = await batcher.run(ctx.cred.applicationId, execute);
      ctx.app.metrics.commitSeconds.observe({ op: spec.operation }, Number(process.hrtime.bigint() - started) / 1e9);
      spec.afterCommit?.(data);
      return { status: spec.status, data };
    } catch (err) {
      const errno = (err as { errno?: number }).errno;
      if (!(err instanceof ReceiptTaken) && errno !== 1213 && errno !== 1205) throw err;
    }
  }
  type Outcome = { replayed: Reply } | { data: Record<string, unknown> };
  const outcome = await withKeyLock(pool, ns, key, async (conn): Promise<Outcome> => {
    for (let round = 0; round < 3; round++) {
      // Autocommit read on the locked connection: sees whatever the previous holder committed.
      const existing = await getReceipt(conn, ns, key);
      if (existing && existing.http_status !== 0) return { replayed: replay(existing, spec, fingerprint) };
      try {
        const started = process.hrtime.bigint();
        const data = await transactionOn(conn, execute);
        ctx.app.metrics.commitSeconds.observe({ op: spec.operation }, Number(process.hrtime.bigint() - started) / 1e9);
        return { data };
      } catch (err) {
        // Only possible if a receipt got in without the key lock: answer with it.
        if (err instanceof ReceiptTaken) continue;
        throw err;
      }
    }
    throw new OrbitError('UNAVAILABLE', 'could not settle the Idempotency-Key; retry with the same key');
  });
  if ('replayed' in outcome) return outcome.replayed;
  spec.afterCommit?.(outcome.data);
  return { status: spec.status, data: outcome.data };
}
