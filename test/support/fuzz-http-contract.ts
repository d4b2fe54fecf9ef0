// The response contract every HTTP fuzz case is checked against (fuzz-http, fuzz-http-workflows):
// no 5xx, the envelope with X-Request-Id, every refusal a documented code with its documented
// status (one of the expected codes when the input must be refused), acceptance only where allowed,
// and for a batch each slot the same.
import { ERROR_CODES, isErrorCode, type ErrorCode } from '../../protocol/errors.js';
import type { RawResponse } from './http.js';
import type { FuzzLog } from './fuzz-harness.js';

/** Why an input must be refused, and with which codes. */
export interface Refusal {
  why: string;
  codes: ErrorCode[];
}

/** What the contract check needs of a case. */
export interface CheckedCase {
  method: 'GET' | 'POST';
  path: string;
  /** The mutation applied, for failure reports. */
  how?: string;
  /** Why the input must be refused; null when any documented answer is fine. */
  refuse: Refusal | null;
  /** POST /v1/tasks:batch: per item, why it must be refused (or null). */
  items?: (Refusal | null)[];
}

/** Why one slot of a batch answer breaks the contract, or null. */
export function slotProblem(slot: any, want: Refusal | null): string | null {
  const code = slot?.error?.code;
  const got = `${slot?.status} ${code ?? ''}`;
  if (typeof slot?.status !== 'number' || slot.status >= 500) return `slot ${got}: expected no 5xx`;
  if (slot.status >= 400) {
    if (!isErrorCode(code) || ERROR_CODES[code].http !== slot.status) return `slot ${got}: not a documented code/status`;
    if (want && !want.codes.includes(code)) return `slot ${got}: expected ${want.codes.join('/')} (${want.why})`;
    return null;
  }
  return want ? `slot ${got}: accepted, expected a refusal (${want.why})` : null;
}

export function describeResponse(r: RawResponse): string {
  const e = r.body?.error;
  return `${r.status}${e ? ` ${e.code} ${JSON.stringify(String(e.message).slice(0, 160))}` : ''}`;
}

/** Why the response breaks the contract, or null. */
export function problem(c: CheckedCase, r: RawResponse): string | null {
  const head = `${c.method} ${c.path.slice(0, 200)}${c.how ? ` [${c.how}]` : ''} → ${describeResponse(r)}`;
  if (r.status >= 500) return `${head}; expected no 5xx${c.refuse ? ` (a refusal: ${c.refuse.why})` : ''}`;
  if (r.body === undefined || typeof r.body.request_id !== 'string' || r.headers.get('x-request-id') !== r.body.request_id)
    return `${head}; no envelope with X-Request-Id`;
  if (r.status >= 400) {
    const code = r.body.error?.code;
    if (!isErrorCode(code)) return `${head}; undocumented error code`;
    if (ERROR_CODES[code].http !== r.status) return `${head}; ${code} is documented as ${ERROR_CODES[code].http}`;
    if (c.refuse && !c.refuse.codes.includes(code)) return `${head}; expected ${c.refuse.codes.join('/')} (${c.refuse.why})`;
    return null;
  }
  if (c.refuse) return `${head}; accepted, expected a refusal (${c.refuse.why})`;
  if (r.status !== 200 && r.status !== 201) return `${head}; unexpected success status`;
  if (c.items) {
    const slots = r.body.data?.results;
    if (!Array.isArray(slots) || slots.length !== c.items.length) return `${head}; expected ${c.items.length} result slots`;
    const bad = c.items.map((want, i) => slotProblem(slots[i], want)).filter((x) => x !== null);
    if (bad.length) return `${head}; ${bad.join('; ')}`;
  }
  return null;
}

/** How deep the generated inputs reach, per endpoint: cases, accepted ones, and refusals past the
 * schema (a code other than INVALID_ARGUMENT). An endpoint that never accepts an input means the
 * generator degraded and tests only the schema check. */
export class DepthReport {
  private readonly byEndpoint = new Map<string, { cases: number; accepted: number; deep: number }>();

  record(endpoint: string, r: RawResponse): void {
    const d = this.byEndpoint.get(endpoint) ?? { cases: 0, accepted: 0, deep: 0 };
    d.cases++;
    if (r.status < 300) d.accepted++;
    else if (r.status < 500 && r.body?.error?.code !== 'INVALID_ARGUMENT') d.deep++;
    this.byEndpoint.set(endpoint, d);
  }

  /** Logs the depth line; fails the log for each endpoint in mustAccept that accepted nothing. */
  report(label: string, mustAccept: string[], log: FuzzLog): void {
    console.log(
      `${label} depth (cases/accepted/refused past the schema): ${[...this.byEndpoint].map(([ep, d]) => `${ep} ${d.cases}/${d.accepted}/${d.deep}`).join(', ')}`,
    );
    for (const ep of mustAccept) if (!this.byEndpoint.get(ep)?.accepted) log.fail(`the generator degraded: no input to ${ep} was accepted`);
  }
}
