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
  const h = req.headers.authorization;
  const m = h ? BEARER.exec(h) : null;
  if (!m) throw new OrbitError('UNAUTHENTICATED', authProblem(h));
  const cred = await findCredentialByTokenHash(pool, hashToken(m[1]!));
  if (!cred || cred.revokedAt) throw new OrbitError('UNAUTHENTICATED', 'unknown or revoked credential');
  return cred;
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
