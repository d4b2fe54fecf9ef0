// Data loading and commands for the pages. Reads reload on the auto-refresh tick; commands carry an
// Idempotency-Key that belongs to one user action (see useAction).
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get, request, withQuery } from './api.js';

/** Increments every 2 s while auto-refresh is on, and after every successful command. */
export const RefreshTick = createContext<{ tick: number; bump: () => void }>({ tick: 0, bump: () => {} });

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
}

/** Keeps the last data while reloading so the page does not flicker. */
export function useResource<T>(load: (() => Promise<T>) | null, deps: unknown[]): Resource<T> {
  const { tick } = useContext(RefreshTick);
  const [state, setState] = useState<Resource<T>>({ data: undefined, error: undefined });
  const seq = useRef(0);
  const depKey = JSON.stringify(deps);
  const lastKey = useRef(depKey);
  useEffect(() => {
    if (!load) return;
    const my = ++seq.current;
    const fresh = lastKey.current !== depKey;
    lastKey.current = depKey;
    setState((s) => ({ data: fresh ? undefined : s.data, error: undefined }));
    load().then(
      (data) => my === seq.current && setState({ data, error: undefined }),
      (e: unknown) => my === seq.current && setState((s) => ({ data: s.data, error: toApiError(e) })),
    );
  }, [depKey, tick]);
  return state;
}

export function toApiError(e: unknown): ApiError {
  return e instanceof ApiError ? e : new ApiError(0, 'CONSOLE', (e as Error)?.message ?? String(e), null);
}

export interface Action<B, R = unknown> {
  run: (body: B) => Promise<boolean>;
  busy: boolean;
  /** The answer of the last successful send (e.g. the run a start created). */
  result?: R;
  error?: ApiError;
  done: boolean;
  /** The key of the action in progress or last failed (shown so a retry is visibly the same). */
  key: string | undefined;
}

/** One user action is one Idempotency-Key, reused while the same path and body are retried, so
 * the server executes it at most once. A success, or a different body, starts a new action. */
export function useAction<B, R = unknown>(path: string): Action<B, R> {
  const { bump } = useContext(RefreshTick);
  const [state, setState] = useState<Omit<Action<B, R>, 'run' | 'key'>>({ busy: false, done: false });
  const pending = useRef<{ key: string; fingerprint: string } | undefined>(undefined);
  const inFlight = useRef(false);
  const run = useCallback(
    async (body: B) => {
      if (inFlight.current) return false;
      const fingerprint = path + '\n' + JSON.stringify(body);
      if (!pending.current || pending.current.fingerprint !== fingerprint) pending.current = { key: `console-${crypto.randomUUID()}`, fingerprint };
      inFlight.current = true;
      setState((s) => ({ ...s, busy: true, error: undefined, done: false }));
      try {
        const result = await request<R>('POST', path, body, pending.current.key);
        pending.current = undefined;
        setState({ busy: false, result, done: true });
        bump();
        return true;
      } catch (e) {
        const error = toApiError(e);
        // A refusal that is final for this content ends the action: a changed retry is a new one.
        if (!error.retryable) pending.current = undefined;
        setState((s) => ({ ...s, busy: false, error }));
        return false;
      } finally {
        inFlight.current = false;
      }
    },
    [path, bump],
  );
  return { ...state, run, key: pending.current?.key };
}

/** A GET of `path` (null: not readable, nothing loaded), reloaded when the path changes. */
export function useGet<T>(path: string | null): Resource<T> {
  return useResource(path === null ? null : () => get<T>(path), [path]);
}

/** One page of a list: forward-only API cursors, with the cursors of earlier pages kept for Previous. */
export function usePage<T>(path: string, query: Record<string, string | undefined> = {}, limit = '50') {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const pager = {
    page: cursors.length + 1,
    first: () => setCursors([]),
    prev: () => setCursors(cursors.slice(0, -1)),
    next: (c: string | null | undefined) => c && setCursors([...cursors, c]),
  };
  return [useGet<T & { next_cursor: string | null }>(withQuery(path, { ...query, limit, cursor })), pager] as const;
}

export type Pager = ReturnType<typeof usePage>[1];
