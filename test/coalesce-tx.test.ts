// Work handed an `InTransaction` (server/dispatch/coalesce-tx.ts), River-style: one shared test
// body against both ways to run it — each piece in its own transaction, and coalesced (pieces that
// arrive together share a transaction, one SAVEPOINT each) — against the real MariaDB. The answers
// must be the same; only the number of transactions differs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, type TestDb } from './support/db.js';
import { coalescedTransactions, type InTransaction } from '../server/dispatch/coalesce-tx.js';
import { transactionStats } from '../server/db/pipeline.js';
import { withTransaction, type Pool } from '../server/db/pool.js';

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
  await db.pool.query('CREATE TABLE ctx_t (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL)');
});
afterAll(async () => db?.drop());

const ids = async (): Promise<number[]> => (await db.pool.query<RowDataPacket[]>('SELECT id FROM ctx_t ORDER BY id'))[0].map((r) => Number(r.id));

const WAYS: [string, (pool: Pool) => InTransaction, (n: number) => boolean][] = [
  ['separate transactions', (pool) => (_group, work) => withTransaction(pool, 'command', work), (n) => n === 8],
  // The first piece leaves alone; the seven that arrive while it commits share the next one.
  ['coalesced transactions', (pool) => coalescedTransactions(pool, { path: 'command', maxBatch: 64, maxParallel: 1 }), (n) => n === 2],
];

describe.each(WAYS)('work in %s', (_way, make, expectedTransactions) => {
  it('answers each piece with its result after the commit', async () => {
    await db.pool.query('DELETE FROM ctx_t');
    const inTx = make(db.pool);
    const before = transactionStats.transactions;
    const out = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        inTx('app', async (c) => {
          await c.query('INSERT INTO ctx_t VALUES (?, ?)', [i, `v${i}`]);
          return i * 10;
        }),
      ),
    );
    expect(out).toEqual([0, 10, 20, 30, 40, 50, 60, 70]);
    expect(await ids()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(expectedTransactions(transactionStats.transactions - before)).toBe(true);
  });

  it('a piece that fails is undone alone and answered with its own error; its neighbours commit', async () => {
    await db.pool.query('DELETE FROM ctx_t');
    await db.pool.query("INSERT INTO ctx_t VALUES (100, 'taken')");
    const inTx = make(db.pool);
    const out = await Promise.allSettled(
      [1, 2, 100, 3].map((id) =>
        inTx('app', async (c) => {
          // Piece 100 writes a row, then fails on the duplicate key: the row it wrote goes too.
          await c.query('INSERT INTO ctx_t VALUES (?, ?)', [id + 1000, 'side']);
          await c.query('INSERT INTO ctx_t VALUES (?, ?)', [id, 'new']);
          return id;
        }),
      ),
    );
    expect(out.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as { errno?: number }).errno))).toEqual([1, 2, 1062, 3]);
    expect(await ids()).toEqual([1, 2, 3, 100, 1001, 1002, 1003]);
  });

  it('a thrown error of the code (not the database) is that piece’s answer too', async () => {
    await db.pool.query('DELETE FROM ctx_t');
    const inTx = make(db.pool);
    const out = await Promise.allSettled(
      [1, 2, 3].map((id) =>
        inTx('app', async (c) => {
          await c.query('INSERT INTO ctx_t VALUES (?, ?)', [id, 'x']);
          if (id === 2) throw new Error('refused by the effect');
          return id;
        }),
      ),
    );
    expect(out.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([1, 'refused by the effect', 3]);
    expect(await ids()).toEqual([1, 3]);
  });
});
