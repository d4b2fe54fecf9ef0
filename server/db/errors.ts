// The MariaDB error numbers Orbit decides on, by name, in one table (as graphile-worker's
// RETRYABLE_ERROR_CODES): which ones a transaction may be re-run after, and which one is a
// duplicate key. A number that appears raw elsewhere is a bug waiting for a second copy.

/** Failures after which the whole transaction has been (or is then) rolled back and can run again
 * from the start with nothing of it committed: transactionOn retries them with jitter, and an edge
 * that still gets one after the retries answers UNAVAILABLE (retry later), never INTERNAL. */
export const RETRYABLE_ERRNO = {
  /** ER_LOCK_DEADLOCK: InnoDB chose this transaction as a deadlock victim and rolled it back whole;
   * Galera reports a failed certification (a write set of another node won) with the same number,
   * also rolled back whole. */
  DEADLOCK: 1213,
  /** ER_LOCK_WAIT_TIMEOUT: a row lock was not granted within innodb_lock_wait_timeout. Only the
   * statement is rolled back (innodb_rollback_on_timeout is off by default); transactionOn rolls
   * back the rest before a retry. */
  LOCK_WAIT_TIMEOUT: 1205,
  /** ER_LOCK_NOWAIT (MySQL 8): a `FOR UPDATE NOWAIT` found the row locked (MariaDB answers that
   * with 1205). Only the statement is undone, as with a lock wait timeout. */
  LOCK_NOWAIT: 3572,
} as const;

/** Failures that running the same statements again would only repeat: the caller decides (a
 * duplicate key means another command got there first: replay its receipt). */
export const PERMANENT_ERRNO = {
  /** ER_DUP_ENTRY: a unique key already holds the value (only the statement is undone). */
  DUP_ENTRY: 1062,
  /** ER_BAD_NULL_ERROR: NULL into a NOT NULL column. The checked assignments of
   * db/conditional-commit.ts set a counter to NULL on purpose to fail their transaction before its
   * COMMIT (isCheckRefusal tells them from any other). */
  BAD_NULL: 1048,
} as const;

/** Error numbers (mysql2's `errno`) Orbit handles by name. */
export const MYSQL_ERRNO = { ...RETRYABLE_ERRNO, ...PERMANENT_ERRNO } as const;

export type RetryableErrno = (typeof RETRYABLE_ERRNO)[keyof typeof RETRYABLE_ERRNO];
export type PermanentErrno = (typeof PERMANENT_ERRNO)[keyof typeof PERMANENT_ERRNO];

/** A server error whose number is one of `N`. */
export type DbError<N extends number> = Error & { errno: N };

export const RETRYABLE_ERRNOS: ReadonlySet<number> = new Set<number>(Object.values(RETRYABLE_ERRNO));

/** The MariaDB error number of `err`, if it is a server error. */
export function errnoOf(err: unknown): number | undefined {
  const n = (err as { errno?: unknown } | null)?.errno;
  return typeof n === 'number' ? n : undefined;
}

/** True for a deadlock, a Galera certification failure or a lock wait timeout (RETRYABLE_ERRNOS). */
export function isRetryableDbError(err: unknown): err is DbError<RetryableErrno> {
  const n = errnoOf(err);
  return n !== undefined && RETRYABLE_ERRNOS.has(n);
}

/** True for a duplicate key (ER_DUP_ENTRY). */
export function isDuplicateKey(err: unknown): err is DbError<typeof PERMANENT_ERRNO.DUP_ENTRY> {
  return errnoOf(err) === MYSQL_ERRNO.DUP_ENTRY;
}
