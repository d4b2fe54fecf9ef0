// Test-only (ORBIT_FAULT_INJECTION=1, server/faults.ts): a real server error inside a transaction,
// so the tests of the retry paths see what a deadlock or a lock wait timeout looks like to mysql2 —
// the error packet of MariaDB, not an object made up in JavaScript.
import type { Tx } from './pool.js';
import { write } from './pipeline.js';

/** queueInjectedError(errno): queues `SIGNAL` with that MariaDB error number (SQLSTATE 40001, a
 * transaction rollback); it fails the transaction's next round trip. `errno` is an integer the
 * caller checked (Faults accepts only RETRYABLE_ERRNOS). No lock. */
export async function queueInjectedError(c: Tx, errno: number): Promise<void> {
  if (!Number.isInteger(errno)) throw new Error(`not an error number: ${errno}`);
  await write(c, `SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = ${errno}, MESSAGE_TEXT = 'injected by ORBIT_FAULT_INJECTION'`);
}
