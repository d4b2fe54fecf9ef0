// The MariaDB error numbers Orbit decides on, by name, in one table.

/** The transaction is rolled back whole and can run again; an edge still getting one after the
 * retries answers UNAVAILABLE. */
export const RETRYABLE_ERRNO = {
  /** Deadlock victim, or failed Galera certification. */
  DEADLOCK: 1213,
  /** Only the statement is rolled back. */
  LOCK_WAIT_TIMEOUT: 1205,
  LOCK_NOWAIT: 3572,
} as const;

export const PERMANENT_ERRNO = {
  DUP_ENTRY: 1062,
  /** Also a checked assignment's refusal. */
  BAD_NULL: 1048,
} as const;

export const MYSQL_ERRNO = { ...RETRYABLE_ERRNO, ...PERMANENT_ERRNO } as const;

export type RetryableErrno = (typeof RETRYABLE_ERRNO)[keyof typeof RETRYABLE_ERRNO];

export type DbError<N extends number> = Error & { errno: N };

export const RETRYABLE_ERRNOS: ReadonlySet<number> = new Set<number>(Object.values(RETRYABLE_ERRNO));

export function errnoOf(err: unknown): number | undefined {
  const n = (err as { errno?: unknown } | null)?.errno;
  return typeof n === 'number' ? n : undefined;
}

export function isRetryableDbError(err: unknown): err is DbError<RetryableErrno> {
  const n = errnoOf(err);
  return n !== undefined && RETRYABLE_ERRNOS.has(n);
}

export function isDuplicateKey(err: unknown): err is DbError<typeof PERMANENT_ERRNO.DUP_ENTRY> {
  return errnoOf(err) === MYSQL_ERRNO.DUP_ENTRY;
}
