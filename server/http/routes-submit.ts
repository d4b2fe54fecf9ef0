// Submits are validated here and handed to the node's one task-creation path.
import { OrbitError, type ErrorBody } from '@orbit/protocol/errors';
import { SubmitBatchBody, SubmitBatchItem, SubmitTaskBody, firstViolation } from '@orbit/protocol/http-schemas';
import { normalizeSubmit, type PreparedSubmit } from '../dispatch/submit-input.js';
import type { SubmitOutcome } from '../dispatch/submit.js';
import { readJsonBody } from './body.js';
import { readCommand, scopedRoute, rejectQuery } from './command.js';
import type { Reply, RequestCtx } from './context.js';

function submitter(ctx: RequestCtx) {
  if (!ctx.app.submitter) throw new OrbitError('UNAVAILABLE', 'task submission is not running on this node');
  return ctx.app.submitter;
}

export async function submitTask(ctx: RequestCtx): Promise<Reply> {
  // The same request checks as every command; its receipts and transaction are the submitter's.
  const { key, body } = await readCommand(ctx, 'tasks:submit', SubmitTaskBody);
  const prepared = normalizeSubmit(body);
  const out = await submitter(ctx).submit({ credential: ctx.cred, key, prepared, checkCredential: ctx.credentialChecked === false });
  if (!out.ok) throw out.error;
  return { status: out.status, data: out.data, json: out.json };
}

type BatchSlot = { status: number; data: Extract<SubmitOutcome, { ok: true }>['data'] } | { status: number; error: ErrorBody };

function errorSlot(e: OrbitError): BatchSlot {
  return { status: e.httpStatus, error: e.toBody() };
}

/** Exactly as POST /v1/tasks would validate that body. */
function prepareItem(raw: unknown, index: number): { key: string; prepared: PreparedSubmit } | OrbitError {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return new OrbitError('INVALID_ARGUMENT', `tasks.${index}: must be a JSON object`, { field: `tasks.${index}` });
  const v = firstViolation(SubmitBatchItem, raw);
  if (v) return new OrbitError('INVALID_ARGUMENT', `${v.field || 'item'}: ${v.message}`, { field: v.field });
  const { idempotency_key: key, ...body } = raw as SubmitBatchItem;
  try {
    return { key, prepared: normalizeSubmit(body) };
  } catch (err) {
    if (err instanceof OrbitError) return err;
    throw err;
  }
}

/** Each item is its own command with its own receipt; the batch is not atomic. */
export const submitTaskBatch = scopedRoute(['tasks:submit'], async (ctx) => {
  rejectQuery(ctx);
  if (ctx.req.headers['idempotency-key'] !== undefined) {
    throw new OrbitError('INVALID_ARGUMENT', 'POST /v1/tasks:batch takes an idempotency_key per item, not an Idempotency-Key header', {
      field: 'Idempotency-Key',
    });
  }
  const body = await readJsonBody(ctx.req, ctx.app.config.maxBatchBodyBytes);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new OrbitError('INVALID_ARGUMENT', 'body must be a JSON object');
  const v = firstViolation(SubmitBatchBody, body);
  if (v) throw new OrbitError('INVALID_ARGUMENT', `${v.field || 'body'}: ${v.message}`, { field: v.field || 'tasks' });
  const items = (body as SubmitBatchBody).tasks.map(prepareItem);
  const valid = items.filter((it): it is { key: string; prepared: PreparedSubmit } => !(it instanceof OrbitError));
  const pending = submitter(ctx).submitMany(valid.map((it) => ({ credential: ctx.cred, key: it.key, prepared: it.prepared })));
  let next = 0;
  const results = await Promise.all(
    items.map(async (it): Promise<BatchSlot> => {
      if (it instanceof OrbitError) return errorSlot(it);
      const out = await pending[next++]!;
      return out.ok ? { status: out.status, data: out.data } : errorSlot(out.error);
    }),
  );
  return { results };
});
