// One mechanism for every receipt-bearing command: a route declares its command (`command`), and
// the request checks (scope, query, Idempotency-Key, body, then its own load) and the idempotent
// transaction (receipt row claimed first, effect, receipt completed, one commit) run here.
import type { TSchema, Static } from '@sinclair/typebox';
import { OrbitError } from '@orbit/protocol/errors';
import { violations } from '@orbit/protocol/http-schemas';
import { IDEMPOTENCY_KEY_RE } from '@orbit/protocol/primitives';
import { isDuplicateKey, isRetryableDbError } from '../db/errors.js';
import type { Tx } from '../db/pool.js';
import { commandFingerprint, executeIdempotent, replayReceipt, runAlone } from '../dispatch/idempotency.js';
import { claimReceipt, completeReceipt, getReceipt, type ReceiptRow } from '../db/receipts.js';
import { requireScope, type Scope } from '../admin/access.js';
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
    const more =
      all.length > 1
        ? ` (and ${all.length - 1} more: ${all
            .slice(1)
            .map((x) => x.field || 'body')
            .join(', ')})`
        : '';
    throw new OrbitError('INVALID_ARGUMENT', `${v.field || 'body'}: ${v.message}${more}`, { field: v.field, violations: all });
  }
  return body as Static<T>;
}

function idempotencyKey(ctx: RequestCtx): string {
  const raw = ctx.req.headers['idempotency-key'];
  if (typeof raw !== 'string') throw new OrbitError('INVALID_ARGUMENT', 'Idempotency-Key header is required', { field: 'Idempotency-Key' });
  if (!IDEMPOTENCY_KEY_RE.test(raw)) {
    throw new OrbitError('INVALID_ARGUMENT', 'Idempotency-Key must be 1-255 visible ASCII characters', { field: 'Idempotency-Key' });
  }
  return raw;
}

/** What a command answers and freezes in its receipt: the response data (without
 * `deduplicated`) and the id of the resource created or changed. */
export interface CommandReply {
  data: Record<string, unknown>;
  resourceId: string | null;
}

/**
 * A receipt-bearing command, declared once (see `command`). `I` is the command's input: what is
 * fingerprinted for the Idempotency-Key and handed to the effect; `R` is the effect's result.
 */
export interface CommandDef<S extends TSchema, I, R> {
  /** Method + path template, e.g. `POST /v1/tasks/{id}:cancel` (receipts and metrics name it). */
  operation: string;
  /** The scope the credential needs (403 PERMISSION_DENIED without it). */
  scope: Scope;
  /** The body's schema (every violation listed in one 400). */
  body: S;
  /** Success status of a first execution (201 create, 200 change); a replay is always 200. */
  status: 201 | 200;
  /** The checks after the body and before any receipt is touched — the target exists (404) and
   * is within queue_ids (403), the 400s a schema cannot express — in the order they should win;
   * returns the command's input (normalized, defaults applied). Without it the input is the body. */
  load?: (ctx: RequestCtx, body: Static<S>) => Promise<I>;
  /** The effect, inside the command's transaction. Throwing rolls back everything, receipt included. */
  effect: (tx: Tx, input: I, ctx: RequestCtx) => Promise<R>;
  /** The reply to freeze in the receipt, from the effect's result (still inside the transaction). */
  reply: (result: R, input: I) => CommandReply;
  /** Runs once after the commit of a first execution (wake-ups, cancel frames), never on a replay. */
  afterCommit?: (result: R, ctx: RequestCtx) => void;
}

/**
 * The request half of every command, in the order whose error wins when several apply: scope
 * (403), query parameters (400), the Idempotency-Key header (400), the body (413/400).
 */
export async function readCommand<S extends TSchema>(ctx: RequestCtx, scope: Scope, schema: S): Promise<{ key: string; body: Static<S> }> {
  requireScope(ctx.cred, scope);
  rejectQuery(ctx);
  const key = idempotencyKey(ctx);
  return { key, body: await readBody(ctx, schema) };
}

/**
 * A route handler for a receipt-bearing command: the request checks (readCommand), then `load`,
 * then the effect exactly once per (namespace, Idempotency-Key) — its target is the path's `{id}`
 * ('' for creates).
 */
export function command<S extends TSchema, I = Static<S>, R = CommandReply>(def: CommandDef<S, I, R>): (ctx: RequestCtx) => Promise<Reply> {
  return async (ctx) => {
    const { key, body } = await readCommand(ctx, def.scope, def.body);
    const input = def.load ? await def.load(ctx, body) : (body as unknown as I);
    return runCommand(ctx, key, def, input);
  };
}

/** What one committed execution produced: the stored reply and the effect's own result. */
interface Executed<R> {
  stored: Record<string, unknown>;
  result: R;
}

/** The key was committed by a concurrent request while this one waited on its row lock. */
class ReceiptTaken extends Error {}

/** Executes a command exactly once per (namespace, Idempotency-Key); its target is the path's
 * `{id}` ('' for creates), its input what is fingerprinted. */
async function runCommand<S extends TSchema, I, R>(ctx: RequestCtx, key: string, def: CommandDef<S, I, R>, input: I): Promise<Reply> {
  const ns = ctx.cred.namespaceId;
  const targetId = ctx.params.id ?? '';
  const fingerprint = commandFingerprint(def.operation, targetId, input);
  const pool = ctx.app.pool;
  const replay = (row: ReceiptRow): Reply => replayReceipt(row, def.operation, targetId, fingerprint);
  // No read of the receipt first: a committed receipt makes the batched INSERT below fail at once
  // with a duplicate key, and the serialized path replays it. Replays are rare; the saved statement
  // is paid by every first execution.
  // Common path: the command joins the node's coalesced command transaction (many commands, one
  // commit). Its receipt row is claimed first under a savepoint; a key taken by a concurrent
  // command (or a deadlock among same-key waiters) falls through to the serialized path below.
  // The command inside its transaction: the receipt row first (a concurrent or committed command
  // with the same key makes it fail as ReceiptTaken), then the effect, then the frozen reply.
  // The effect's result travels with the reply of the run that committed (a batch retried after
  // a deadlock re-runs the effect; only the last run's result is seen after the commit).
  const execute = async (c: Tx): Promise<Executed<R>> => {
    try {
      await claimReceipt(c, { namespaceId: ns, key, operation: def.operation, targetId, fingerprint, credentialId: ctx.cred.id });
    } catch (err) {
      throw isDuplicateKey(err) ? new ReceiptTaken() : err;
    }
    const result = await def.effect(c, input, ctx);
    const out = def.reply(result, input);
    const stored = { ...out.data, deduplicated: false };
    await completeReceipt(c, ns, key, def.status, stored, out.resourceId);
    return { stored, result };
  };
  const observe = (seconds: number): void => ctx.app.metrics.commitSeconds.observe({ op: def.operation }, seconds);
  type Outcome = { replayed: Reply } | { done: Executed<R> };
  const [outcome] = await executeIdempotent<I, Outcome>(
    [input],
    // Common path: the command joins the node's coalesced command transaction.
    async () => {
      const started = process.hrtime.bigint();
      const done = await ctx.app.commandTx(ctx.cred.applicationId, execute);
      observe(Number(process.hrtime.bigint() - started) / 1e9);
      return [{ done }];
    },
    // A key taken by a concurrent command, or a coalesced batch that kept failing on a retryable
    // error: this command alone, under its key lock.
    (err) => err instanceof ReceiptTaken || isRetryableDbError(err),
    () =>
      runAlone<Outcome>(pool, ns, key, {
        path: 'command',
        // Autocommit read on the locked connection: sees whatever the previous holder committed.
        replayed: async (conn) => {
          const existing = await getReceipt(conn, ns, key);
          return existing && existing.http_status !== 0 ? { replayed: replay(existing) } : undefined;
        },
        tx: async (c) => ({ done: await execute(c) }),
        // Only possible if a receipt got in without the key lock: the next round answers with it.
        taken: (err) => err instanceof ReceiptTaken,
        committed: observe,
      }),
  );
  if ('replayed' in outcome!) return outcome.replayed;
  def.afterCommit?.(outcome!.done.result, ctx);
  return { status: def.status, data: outcome!.done.stored };
}
