// Reading the bearer token of a request (an HTTP call or the worker gateway's WebSocket
// handshake). The scopes and the checks on a credential are server/admin/access.ts.
import type { IncomingMessage } from 'node:http';
import { OrbitError } from '@orbit/protocol/errors';
import type { Pool } from '../db/pool.js';
import { findCredentialByTokenHash, type Credential } from '../db/credentials.js';
import { hashToken } from '../admin/access.js';

// The scheme name is case-insensitive (RFC 7235 §2.1); the token is matched exactly.
const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{8,512})$/i;

/** Authenticates a request (HTTP or WebSocket handshake). 401 for anything but a live token. */
export async function authenticate(pool: Pool, req: IncomingMessage): Promise<Credential> {
  return liveCredential(pool, tokenHash(req));
}

/** The hash of the request's bearer token; 401 when the header is not one. */
function tokenHash(req: IncomingMessage): Buffer {
  const h = req.headers.authorization;
  const m = h ? BEARER.exec(h) : null;
  if (!m) throw new OrbitError('UNAUTHENTICATED', authProblem(h));
  return hashToken(m[1]!);
}

/** The live credential of a token hash, by a lookup; 401 when it is unknown or revoked. */
async function liveCredential(pool: Pool, hash: Buffer): Promise<Credential> {
  const cred = await findCredentialByTokenHash(pool, hash);
  if (!cred || cred.revokedAt) throw new OrbitError('UNAUTHENTICATED', 'unknown or revoked credential');
  return cred;
}

/** Credentials found live by a lookup of this node, by token hash (hex): what a credential grants
 * (namespace, application, scopes, queue_ids) never changes after it is issued, only `revoked_at`
 * does, so an entry is never stale in those facts. Whether it is still live is not taken from here:
 * a request authenticated from the cache has it checked by the database before its answer, in its
 * own transaction (POST /v1/tasks: server/dispatch/submit.ts) or by a lookup before an error is
 * answered (server/http/server.ts). Bounded; the oldest entry goes first. Per pool (one per
 * database; tests run several in one process). */
const cached = new WeakMap<Pool, Map<string, Credential>>();
const CACHE_ENTRIES = 1000;

/** authenticate(), but a token this node has found live before is answered from the cache without
 * a statement: `checked` is then false and the caller must have the credential's liveness checked
 * by the database before it answers (see `cached`). */
export async function authenticateCached(pool: Pool, req: IncomingMessage): Promise<{ cred: Credential; checked: boolean }> {
  const hash = tokenHash(req);
  let byHash = cached.get(pool);
  const hit = byHash?.get(hash.toString('hex'));
  if (hit) return { cred: hit, checked: false };
  const cred = await liveCredential(pool, hash);
  if (!byHash) cached.set(pool, (byHash = new Map()));
  if (byHash.size >= CACHE_ENTRIES) byHash.delete(byHash.keys().next().value!);
  byHash.set(hash.toString('hex'), cred);
  return { cred, checked: true };
}

/** Confirms by a lookup that the credential of a request authenticated from the cache is still
 * live; 401 (and the entry dropped) when it was revoked meanwhile. */
export async function recheckCredential(pool: Pool, req: IncomingMessage): Promise<void> {
  const hash = tokenHash(req);
  try {
    await liveCredential(pool, hash);
  } catch (err) {
    cached.get(pool)?.delete(hash.toString('hex'));
    throw err;
  }
}

/** Why an Authorization header was refused, in words that point at the fix: a missing header, a
 * scheme other than Bearer, or a token that cannot be one Orbit issued (too short, bad bytes) —
 * the last is an unknown credential, not a malformed header. */
function authProblem(h: string | undefined): string {
  if (h === undefined || h.trim() === '') return 'missing Authorization header: send Authorization: Bearer <token>';
  const m = /^(\S+)(?:\s+(.*))?$/.exec(h.trim());
  if (!m || m[1]!.toLowerCase() !== 'bearer') return 'Authorization must use the Bearer scheme: Authorization: Bearer <token>';
  if (!m[2]) return 'Authorization: Bearer has no token';
  return 'unknown or revoked credential (the token is not one Orbit issued)';
}
