// One mechanism for every receipt-bearing command: a route declares it, and the request checks and
// the idempotent transaction run here.
import type { TSchema, Static } from '@sinclair/typebox';
import { OrbitError } from '@orbit/protocol/errors';
import { violations } from '@orbit/protocol/http-schemas';
import { IDEMPOTENCY_KEY_RE } from '@orbit/protocol/primitives';
import { isDuplicateKey, isRetryableDbError } from '../db/errors.js';
import type { Tx } from '../db/pool.js';
import { commandFingerprint, executeIdempotent, replayReceipt, runAlone } from '../dispatch/idempotency.js';
import { claimReceipt, completeReceipt, getReceipt, type ReceiptRow } from '../db/receipts.js';
import { requireAnyScope, requireScope, type Scope } from '../admin/access.js';
import { readJsonBody } from './body.js';
import type { Reply, RequestCtx } from './context.js';

export function rejectQuery(ctx: RequestCtx): void {
  if (ctx.url.search !== '' && ctx.url.search !== '?') {
    throw new OrbitError('INVALID_ARGUMENT', 'command endpoints take no query parameters', { field: 'query' });
  }
}

export async function readBody<T extends TSchema>(ctx: RequestCtx, schema: T): Promise<Static<T>> {
  const body = await readJsonBody(ctx.req, ctx.app.config.maxBodyBytes);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new OrbitError('INVALID_ARGUMENT', 'body must be a JSON object');
  }
  const all = violations(schema, body);
  const v = all[0];
  if (v) {
    // Every violation is listed so that one round trip fixes the request.
    const others = all.slice(1).map((x) => x.field || 'body');
    const more = others.length > 0 ? ` (and ${others.length} more: ${others.join(', ')})` : '';
    throw new OrbitError('INVALID_ARGUMENT', `${v.field || 'body'}: ${v.message}${more}`, { field: v.field, violations: all });
  }
  return body as Static<T>;
}

/** What a command answers and freezes in its receipt; `data` without `deduplicated`. */
export interface CommandReply {
  data: Record<string, unknown>;
  resourceId: string | null;
}

/** The reply of a command whose result is the view of one resource, under `key`. */
export const viewReply =
  (key: string) =>
  (view: { id: string }): CommandReply => ({ data: { [key]: view }, resourceId: view.id });

/** `I` is what is fingerprinted for the Idempotency-Key and handed to the effect. */
export interface CommandDef<S extends TSchema, I, R> {
  /** Method + path template; receipts and metrics name it. */
  operation: string;
  scope: Scope;
  body: S;
  /** Of a first execution, 200 when absent; a replay is always 200. */
  status?: 201;
  /** The checks after the body and before any receipt is touched, in the order they should win;
   * returns the normalized input. Without it the input is the body. */
  load?: (ctx: RequestCtx, body: Static<S>) => Promise<I>;
  /** Throwing rolls back everything, receipt included. */
  effect: (tx: Tx, input: I, ctx: RequestCtx) => Promise<R>;
  /** Still inside the transaction. */
  reply: (result: R, input: I) => CommandReply;
  /** After the commit of a first execution, never on a replay. */
  afterCommit?: (result: R, ctx: RequestCtx) => void;
}

/** A route that answers 200 with what `handle` gives, to a credential with one of `scopes`. */
export function scopedRoute(scopes: readonly Scope[], handle: (ctx: RequestCtx) => Promise<unknown>): (ctx: RequestCtx) => Promise<Reply> {
  return async (ctx) => {
    requireAnyScope(ctx.cred, scopes);
    return { status: 200, data: await handle(ctx) };
  };
}

/** The commands `POST <path>/{id}:<action>` on one kind of resource. The path's resource is read
 * first, so that its 404 and 403 win over the command's own refusals. */
export function commandsOn<R>(on: { path: string; scope: Scope; load: (ctx: RequestCtx) => Promise<unknown>; reply: (result: R) => CommandReply }) {
  return <S extends TSchema>(action: string, body: S, effect: CommandDef<S, Static<S>, R>['effect'], afterCommit?: (result: R, ctx: RequestCtx) => void) =>
    command<S, Static<S>, R>({
      operation: `POST ${on.path}/{id}:${action}`,
      scope: on.scope,
      body,
      load: async (ctx, b) => {
        await on.load(ctx);
        return b;
      },
      effect,
      reply: on.reply,
      afterCommit,
    });
}

/** The order of the checks decides whose error wins when several apply. */
export async function readCommand<S extends TSchema>(ctx: RequestCtx, scope: Scope, schema: S): Promise<{ key: string; body: Static<S> }> {
  requireScope(ctx.cred, scope);
  rejectQuery(ctx);
  const key = ctx.req.headers['idempotency-key'];
  if (typeof key !== 'string') throw new OrbitError('INVALID_ARGUMENT', 'Idempotency-Key header is required', { field: 'Idempotency-Key' });
  if (!IDEMPOTENCY_KEY_RE.test(key)) {
    throw new OrbitError('INVALID_ARGUMENT', 'Idempotency-Key must be 1-255 visible ASCII characters', { field: 'Idempotency-Key' });
  }
  return { key, body: await readBody(ctx, schema) };
}

export function command<S extends TSchema, I = Static<S>, R = CommandReply>(def: CommandDef<S, I, R>): (ctx: RequestCtx) => Promise<Reply> {
  return async (ctx) => {
    const { key, body } = await readCommand(ctx, def.scope, def.body);
    const input = def.load ? await def.load(ctx, body) : (body as unknown as I);
    return runCommand(ctx, key, def, input);
  };
}

interface Executed<R> {
  stored: Record<string, unknown>;
  result: R;
}

/** The key was committed by a concurrent request while this one waited on its row lock. */
class ReceiptTaken extends Error {}

/** Exactly once per (namespace, Idempotency-Key); the target is the path's `{id}`, '' for creates. */
async function runCommand<S extends TSchema, I, R>(ctx: RequestCtx, key: string, def: CommandDef<S, I, R>, input: I): Promise<Reply> {
  const ns = ctx.cred.namespaceId;
  const targetId = ctx.params.id ?? '';
  const fingerprint = commandFingerprint(def.operation, targetId, input);
  const pool = ctx.app.pool;
  const replay = (row: ReceiptRow): Reply => replayReceipt(row, def.operation, targetId, fingerprint);
  // No read of the receipt first: a committed receipt makes the claim fail with a duplicate key
  // and the serialized path replays it, so only the rare replay pays a statement. A batch retried
  // after a deadlock re-runs the effect; only the committed run's result is seen after the commit.
  const execute = async (c: Tx): Promise<Executed<R>> => {
    try {
      await claimReceipt(c, { namespaceId: ns, key, operation: def.operation, targetId, fingerprint, credentialId: ctx.cred.id });
    } catch (err) {
      throw isDuplicateKey(err) ? new ReceiptTaken() : err;
    }
    const result = await def.effect(c, input, ctx);
    const out = def.reply(result, input);
    const stored = { ...out.data, deduplicated: false };
    await completeReceipt(c, ns, key, def.status ?? 200, stored, out.resourceId);
    return { stored, result };
  };
  const observe = (seconds: number): void => ctx.app.metrics.commitSeconds.observe({ op: def.operation }, seconds);
  type Outcome = { replayed: Reply } | { done: Executed<R> };
  const [outcome] = await executeIdempotent<I, Outcome>(
    [input],
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
        // Autocommit read under the key lock: sees whatever the previous holder committed.
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
  return { status: def.status ?? 200, data: outcome!.done.stored };
}
