// The bare-database baseline: minimal single-row commit transactions straight through mysql2, at
// the same connection count as the gateway's pool, on the same durable server.
import mysql from 'mysql2/promise';

export async function baseline(dsnOpts: mysql.ConnectionOptions, connections: number, total: number): Promise<{ commitsPerSec: number; total: number }> {
  const setup = await mysql.createConnection(dsnOpts);
  await setup.query(
    "CREATE TABLE IF NOT EXISTS bench_baseline (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY COMMENT 'row', v INT NOT NULL COMMENT 'value') ENGINE=InnoDB COMMENT='benchmark baseline rows'",
  );
  await setup.end();
  const conns = await Promise.all(Array.from({ length: connections }, () => mysql.createConnection(dsnOpts)));
  let next = 0;
  const started = performance.now();
  await Promise.all(
    conns.map(async (c) => {
      while (next < total) {
        next++;
        await c.query('START TRANSACTION');
        await c.execute('INSERT INTO bench_baseline (v) VALUES (?)', [next]);
        await c.query('COMMIT');
      }
    }),
  );
  const secs = (performance.now() - started) / 1000;
  await Promise.all(conns.map((c) => c.end()));
  return { commitsPerSec: total / secs, total };
}
