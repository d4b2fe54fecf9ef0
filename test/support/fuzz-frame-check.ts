// How the worker frame fuzzer (fuzz-frames) checks what a session answered to one generated frame
// against its documented outcome (support/fuzz-frame-outcome.ts): the frames seen, exactly one
// fatal error with its close code, the documented reply, or silence with the session kept open.
import crypto from 'node:crypto';
import type { ErrorCode } from '../../protocol/errors.js';
import { closeOf, HELLO_REFUSALS, type FrameCase } from './fuzz-frame-outcome.js';
import type { Peer } from './fuzz-ws.js';

/** Counts over a run: hellos accepted, sessions opened, documented replies received. */
export type Stats = { helloOk: number; sessions: number; replied: number };

/** What the peer received and how it ended, for failure reports. */
export function seen(p: Peer): string {
  const frames = p.inbox.map((x) => (x.type === 'error' ? `error ${x.code}${x.fatal ? ' fatal' : ''}` : (x.type ?? JSON.stringify(x).slice(0, 80)))).join(', ');
  return `[${frames}] then ${p.closed ? `close ${p.closed.code} (reason ${Buffer.byteLength(p.closed.reason)} bytes)` : 'still open after 5 s'}`;
}

/** Frames other than assignments (which arrive on their own for sessions holding real work). */
export const replies = (p: Peer) => p.inbox.filter((m) => m.type !== 'task.assign');

/** Exactly one fatal `error` frame with one of `codes`, then the close code documented for it. */
async function fatal(p: Peer, codes: ErrorCode[], close: (c: ErrorCode) => number, why: string): Promise<string | null> {
  await p.until(() => false);
  const [e, ...more] = replies(p);
  const ok =
    e &&
    more.length === 0 &&
    e.type === 'error' &&
    codes.includes(e.code) &&
    e.fatal === true &&
    typeof e.message === 'string' &&
    p.closed?.code === close(e.code);
  return ok ? null : `expected error ${codes.join('/')} (fatal), then close ${[...new Set(codes.map(close))].join('/')} (${why}); got ${seen(p)}`;
}

/** Sends the case on `p` and checks the outcome; a failure text or null. */
export async function check(p: Peer, c: FrameCase, stats: Stats): Promise<string | null> {
  const r = await outcome(p, c, stats);
  return r && c.how ? `${r} [${c.how}]` : r;
}

async function outcome(p: Peer, c: FrameCase, stats: Stats): Promise<string | null> {
  p.inbox.splice(0, p.inbox.length, ...p.inbox.filter((m) => m.type === 'task.assign'));
  p.send(c.data, c.binary);
  const x = c.expect;
  switch (x.kind) {
    case 'fatal':
      return fatal(p, [x.code], () => x.close, x.why);
    case 'hello': {
      await p.until((i) => i.length > 0);
      if (p.inbox[0]?.type === 'hello.ok' && !x.mustRefuse) return (stats.helloOk++, null);
      return fatal(p, x.mustRefuse ? ['NOT_FOUND'] : HELLO_REFUSALS, closeOf, x.mustRefuse ? 'hello naming a queue that does not exist' : 'a valid hello');
    }
    case 'reply': {
      await p.until(() => replies(p).length > 0);
      const r = replies(p)[0];
      if (x.orFatal && (!r || (r.type === 'error' && r.fatal))) return fatal(p, ['PROTOCOL_ERROR'], () => 1002, 'an attempt id that cannot exist');
      const good =
        r?.type === x.type &&
        (x.id === undefined || r.attempt_id === x.id) &&
        (x.type !== 'error' || (r.fatal === false && ['NOT_FOUND', 'LEASE_LOST'].includes(r.code))) &&
        (x.type !== 'renew.ok' || (Array.isArray(r.leases) && r.leases.length === 0));
      const want = x.type === 'error' ? 'a non-fatal NOT_FOUND/LEASE_LOST error naming the attempt' : `${x.type}${x.id ? ' naming the attempt' : ''}`;
      if (!good) return `expected ${want}${x.orFatal ? ' (or PROTOCOL_ERROR, 1002)' : ''}; got ${seen(p)}`;
      stats.replied++;
      return p.closed ? `socket closed after ${want}; got ${seen(p)}` : null;
    }
    case 'silent': {
      // No reply is documented: a renew of an unknown id afterwards must be the next frame.
      p.send(JSON.stringify({ type: 'renew', attempt_ids: [crypto.randomBytes(16).toString('hex')] }));
      await p.until((i) => i.some((m) => m.type === 'renew.ok'));
      const ok = replies(p).length === 1 && replies(p)[0].type === 'renew.ok';
      if (!ok || p.closed) return `expected no reply and the socket kept open; got ${seen(p)}`;
      stats.replied++;
      return null;
    }
  }
}

/** A non-fatal reply leaves the session open: a renew of an unknown id still gets its renew.ok
 * (the round trip also lets a close sent right after the reply arrive first). */
export async function stillOpen(p: Peer, after: string): Promise<string | null> {
  const before = replies(p).length;
  if (!p.closed) p.send(JSON.stringify({ type: 'renew', attempt_ids: [crypto.randomBytes(16).toString('hex')] }));
  await p.until(() => p.closed !== null || replies(p).length > before);
  const r = replies(p)[before];
  const ok = !p.closed && r?.type === 'renew.ok';
  if (ok) p.inbox.splice(p.inbox.indexOf(r), 1);
  return ok ? null : `socket not kept open ${after}; got ${seen(p)}`;
}
