// Reading the bearer token of an HTTP request or a WebSocket handshake.
import type { IncomingMessage } from 'node:http';
import { OrbitError } from '@orbit/protocol/errors';
import type { Pool } from '../db/pool.js';
import { findCredentialByTokenHash, type Credential } from '../db/credentials.js';
import { hashToken } from '../admin/access.js';

// The scheme name is case-insensitive (RFC 7235 §2.1); the token is matched exactly.
const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{8,512})$/i;

export async function authenticate(pool: Pool, req: IncomingMessage): Promise<Credential> {
  return liveCredential(pool, tokenHash(req));
}

function tokenHash(req: IncomingMessage): Buffer {
  const h = req.headers.authorization;
  const m = h ? BEARER.exec(h) : null;
  if (!m) throw new OrbitError('UNAUTHENTICATED', authProblem(h));
  return hashToken(m[1]!);
}

async function liveCredential(pool: Pool, hash: Buffer): Promise<Credential> {
  const cred = await findCredentialByTokenHash(pool, hash);
  if (!cred || cred.revokedAt) throw new OrbitError('UNAUTHENTICATED', 'unknown or revoked credential');
  return cred;
}

/** What a credential grants never changes after it is issued, only `revoked_at` does, so an entry
 * is never stale in those facts. Liveness is never taken from here: a request authenticated from
 * the cache has it checked by the database before its answer. Per pool: tests run several. */
const cached = new WeakMap<Pool, Map<string, Credential>>();
const CACHE_ENTRIES = 1000;

/** `checked` false: the credential came from the cache, and the caller must have its liveness
 * checked by the database before it answers. */
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

export async function recheckCredential(pool: Pool, req: IncomingMessage): Promise<void> {
  const hash = tokenHash(req);
  try {
    await liveCredential(pool, hash);
  } catch (err) {
    cached.get(pool)?.delete(hash.toString('hex'));
    throw err;
  }
}

/** In words that point at the fix. A token that cannot be one Orbit issued is an unknown
 * credential, not a malformed header. */
function authProblem(h: string | undefined): string {
  if (h === undefined || h.trim() === '') return 'missing Authorization header: send Authorization: Bearer <token>';
  const m = /^(\S+)(?:\s+(.*))?$/.exec(h.trim());
  if (!m || m[1]!.toLowerCase() !== 'bearer') return 'Authorization must use the Bearer scheme: Authorization: Bearer <token>';
  if (!m[2]) return 'Authorization: Bearer has no token';
  return 'unknown or revoked credential (the token is not one Orbit issued)';
}
