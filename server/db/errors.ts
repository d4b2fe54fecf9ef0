// The MariaDB error numbers Orbit decides on, by name, in one table.

export const MYSQL_ERRNO = {
  /** Deadlock victim, or failed Galera certification. */
  DEADLOCK: 1213,
  /** Only the statement is rolled back. */
  LOCK_WAIT_TIMEOUT: 1205,
  LOCK_NOWAIT: 3572,
  DUP_ENTRY: 1062,
  /** Also a checked assignment's refusal. */
  BAD_NULL: 1048,
} as const;

/** The transaction is rolled back whole and can run again; an edge still getting one after the
 * retries answers UNAVAILABLE. */
const RETRYABLE: ReadonlySet<number> = new Set([MYSQL_ERRNO.DEADLOCK, MYSQL_ERRNO.LOCK_WAIT_TIMEOUT, MYSQL_ERRNO.LOCK_NOWAIT]);

export function errnoOf(err: unknown): number | undefined {
  const n = (err as { errno?: unknown } | null)?.errno;
  return typeof n === 'number' ? n : undefined;
}

export function isRetryableDbError(err: unknown): err is Error & { errno: number } {
  const n = errnoOf(err);
  return n !== undefined && RETRYABLE.has(n);
}

export function isDuplicateKey(err: unknown): boolean {
  return errnoOf(err) === MYSQL_ERRNO.DUP_ENTRY;
}
