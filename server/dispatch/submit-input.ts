import { OrbitError } from '@orbit/protocol/errors';
import type { SubmitTaskBody } from '@orbit/protocol/http-schemas';
import { DEFAULT_DEADLINE_SECONDS, MAX_PAYLOAD_BYTES } from '@orbit/protocol/limits';
import { businessKeyProblem, concurrencyKeyProblem, parseRfc3339 } from '@orbit/protocol/validation';

/** The first integer beyond 2^53, which a double would store changed; sent as a string instead. */
export function lossyNumberPath(v: unknown, path: string): string | null {
  if (typeof v === 'number') return Math.abs(v) > Number.MAX_SAFE_INTEGER ? path : null;
  if (v === null || typeof v !== 'object') return null;
  // An array's entries are its indices.
  for (const [k, x] of Object.entries(v)) {
    const p = lossyNumberPath(x, `${path}.${k}`);
    if (p) return p;
  }
  return null;
}

export function normalizeSubmit(b: SubmitTaskBody) {
  const payloadJson = JSON.stringify(b.payload);
  if (Buffer.byteLength(payloadJson) > MAX_PAYLOAD_BYTES) {
    throw new OrbitError('PAYLOAD_TOO_LARGE', `payload: serialized over ${MAX_PAYLOAD_BYTES} bytes`, { field: 'payload' });
  }
  const lossy = lossyNumberPath(b.payload, 'payload');
  if (lossy) {
    throw new OrbitError('INVALID_ARGUMENT', `${lossy}: number beyond ±2^53 would lose precision; send it as a string`, { field: lossy });
  }
  if (b.business_key !== undefined) {
    const p = businessKeyProblem(b.business_key);
    if (p) throw new OrbitError('INVALID_ARGUMENT', `business_key: ${p}`, { field: 'business_key' });
  }
  const key = b.concurrency_key === '' ? undefined : b.concurrency_key;
  if (key !== undefined) {
    const p = concurrencyKeyProblem(key);
    if (p) throw new OrbitError('INVALID_ARGUMENT', `concurrency_key: ${p}`, { field: 'concurrency_key' });
  }
  let notBeforeMs: number | undefined;
  if (b.not_before !== undefined) {
    const t = parseRfc3339(b.not_before);
    if (t === null) throw new OrbitError('INVALID_ARGUMENT', 'not_before: must be an RFC 3339 timestamp', { field: 'not_before' });
    notBeforeMs = t;
  }
  return {
    normalized: {
      queue_id: b.queue_id,
      handler: b.handler,
      handler_version: b.handler_version,
      payload_version: b.payload_version,
      payload: b.payload,
      business_key: b.business_key,
      concurrency_key: key,
      priority: b.priority ?? 0,
      max_attempts: b.max_attempts,
      deadline_seconds: b.deadline_seconds ?? DEFAULT_DEADLINE_SECONDS,
      not_before: notBeforeMs === undefined ? undefined : new Date(notBeforeMs).toISOString(),
    },
    payloadJson,
    notBeforeMs,
  };
}

export type PreparedSubmit = ReturnType<typeof normalizeSubmit>;
