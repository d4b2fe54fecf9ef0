// The console's only way to the server: the public /v1 API with the pasted token. The token lives
// in sessionStorage only, so it is gone with the tab.
import type { ErrorBody } from '../../../protocol/errors.js';

const TOKEN_KEY = 'orbit.console.token';

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}
export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}
export function clearToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** A network failure has code NETWORK. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
  /** Safe to repeat unchanged with the same Idempotency-Key (the "retryable" column of docs/errors.md). */
  get retryable(): boolean {
    return this.code === 'NETWORK' || this.code === 'UNAVAILABLE';
  }
}

type Listener = () => void;
const unauthenticated = new Set<Listener>();
/** Called when any call answers 401: the shell goes back to sign-in. */
export function onUnauthenticated(l: Listener): () => void {
  unauthenticated.add(l);
  return () => unauthenticated.delete(l);
}

interface Envelope<T> {
  request_id: string;
  data?: T;
  error?: ErrorBody;
}

/** A command's Idempotency-Key belongs to its caller (see useAction). */
export async function request<T>(method: 'GET' | 'POST', path: string, body?: unknown, idempotencyKey?: string, token = getToken()): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'NETWORK', `network error: ${(e as Error).message}`, null);
  }
  let env: Envelope<T>;
  try {
    env = (await res.json()) as Envelope<T>;
  } catch {
    throw new ApiError(res.status, 'NETWORK', `unreadable response (HTTP ${res.status})`, res.headers.get('x-request-id'));
  }
  if (env.error || !res.ok) {
    const e = env.error ?? { code: 'INTERNAL', message: `HTTP ${res.status}` };
    if (res.status === 401 && token === getToken()) for (const l of unauthenticated) l();
    throw new ApiError(res.status, e.code, e.message, env.request_id ?? null, e.details);
  }
  return env.data as T;
}

export function get<T>(path: string, token?: string): Promise<T> {
  return request<T>('GET', path, undefined, undefined, token);
}

/** What `call` answers, or `refused[status]` when it is refused with one of those statuses. */
export async function unless<T>(call: Promise<T>, refused: Record<number, T>): Promise<T> {
  try {
    return await call;
  } catch (e) {
    if (e instanceof ApiError && e.status in refused) return refused[e.status]!;
    throw e;
  }
}

/** Empty parameters are left out. */
export function withQuery(path: string, q: Record<string, string | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? `${path}?${s}` : path;
}

export const enc = encodeURIComponent;
