// Run-time side of the fuzz suites: seed and run count from the environment, bounded concurrency,
// a database fingerprint, and a failure log that survives a crashed gateway (the process is
// replaced, the batch is replayed one case at a time to name the input that killed it).
//
//   ORBIT_FUZZ_SEED=123 ORBIT_FUZZ_RUNS=500 npx vitest run test/fuzz-http.test.ts
import type { RowDataPacket } from 'mysql2/promise';
import type { Pool } from '../../server/db/pool.js';
import type { GatewayFixture } from './fixture.js';
import { startGateway, type GatewayProcess } from './gateway.js';
import { waitForValue } from './wait.js';

function envInt(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new Error(`${name} must be an integer, got ${v}`);
  return n;
}

export const FUZZ_SEED = envInt('ORBIT_FUZZ_SEED') ?? 20_260_909;
const RUNS = envInt('ORBIT_FUZZ_RUNS');

/** fc.assert parameters: fixed seed (ORBIT_FUZZ_SEED), `def` runs unless ORBIT_FUZZ_RUNS says more. */
export function fcParams(def: number) {
  return { seed: FUZZ_SEED, numRuns: RUNS ?? def, endOnFailure: true };
}

/** What a property keeps of its test timeout to finish the batch in flight and run its checks. */
const FINISH_MS = 30_000;

/** Test timeout for a property of `def` runs of about `msPerRun` each. */
export function fuzzTimeout(def: number, msPerRun: number): number {
  return FINISH_MS + (RUNS ?? def) * msPerRun * 3;
}

/** The time a property of `def` runs of `msPerRun` may spend generating (its FuzzLog's budget): on a
 * loaded machine it stops early instead of timing out, so no request of a timed-out property is
 * still running when the next test starts (they broke the next tests' database checks). */
export function fuzzBudget(def: number, msPerRun: number): number {
  return fuzzTimeout(def, msPerRun) - FINISH_MS;
}

export async function mapLimit<T, R>(items: T[], limit: number, fn: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

/** A database probe: a table name (row count + CHECKSUM TABLE) or a query returning one row (n, x). */
export type Probe = string | { name: string; sql: string };

/** Row counts and fingerprints of the probed tables. */
export interface DbState {
  counts: Record<string, number>;
  sums: Record<string, string>;
}

export async function dbState(pool: Pool, probes: Probe[]): Promise<DbState> {
  const st: DbState = { counts: {}, sums: {} };
  const tables = probes.filter((p): p is string => typeof p === 'string');
  if (tables.length) {
    const [sums] = await pool.query<RowDataPacket[]>(`CHECKSUM TABLE ${tables.join(', ')}`);
    const [[counts]] = (await pool.query<RowDataPacket[]>(`SELECT ${tables.map((t) => `(SELECT COUNT(*) FROM ${t}) AS ${t}`).join(', ')}`)) as unknown as [
      [Record<string, number>],
    ];
    tables.forEach((t, i) => ((st.counts[t] = Number(counts![t])), (st.sums[t] = String(sums[i]!.Checksum))));
  }
  for (const p of probes) {
    if (typeof p === 'string') continue;
    const [[row]] = (await pool.query<RowDataPacket[]>(p.sql)) as unknown as [[{ n: number; x: unknown }]];
    st.counts[p.name] = Number(row!.n);
    st.sums[p.name] = String(row!.x);
  }
  return st;
}

/** What changed: with 'none', any count or fingerprint; with a map, the counts of the tables it
 * names must have moved by exactly that much (other tables are not checked). */
export function dbDiff(before: DbState, after: DbState, delta: Record<string, number> | 'none'): string[] {
  const out: string[] = [];
  for (const t of delta === 'none' ? Object.keys(before.counts) : Object.keys(delta)) {
    const want = before.counts[t]! + (delta === 'none' ? 0 : delta[t]!);
    if (after.counts[t] !== want) out.push(`${t}: ${before.counts[t]} → ${after.counts[t]} rows, expected ${want}`);
    else if (delta === 'none' && after.sums[t] !== before.sums[t]) out.push(`${t}: same row count, content changed`);
  }
  return out;
}

/** An input for a failure report: repeats folded (‹[›×600), JSON-escaped (lone surrogates show), cut at 400 chars. */
export function show(input: string | Buffer): string {
  if (Buffer.isBuffer(input)) {
    const t = input.toString('latin1');
    return `bytes(${input.length}) ${JSON.stringify(fold(t)).slice(0, 400)}`;
  }
  const s = JSON.stringify(fold(input));
  return s.length > 400 ? `${s.slice(0, 400)}… (${input.length} chars)` : s;
}

function fold(s: string): string {
  return s.replace(/(.{1,6}?)\1{7,}/gsu, (m, u: string) => `‹${u}›×${m.length / u.length}`);
}

/** The gateway under test; a crashed one is replaced so that later cases still run. */
export class FuzzTarget {
  private replaced: GatewayProcess | undefined;
  constructor(
    private readonly f: GatewayFixture,
    private readonly env: Record<string, string> = {},
  ) {}
  get gw(): GatewayProcess {
    return this.replaced ?? this.f.gw;
  }
  get url(): string {
    return this.gw.url;
  }
  alive(): boolean {
    return this.gw.child.exitCode === null && this.gw.child.signalCode === null;
  }
  /** Alive and answering /healthz. A process that is dying closes its sockets before 'exit'
   * fires; when /healthz fails this waits for the exit, so the case that killed it is named. */
  async serving(): Promise<boolean> {
    if (!this.alive()) return false;
    const ok = await fetch(this.url + '/healthz', { signal: AbortSignal.timeout(5000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return true;
    const child = this.gw.child;
    if (this.alive()) await new Promise((r) => (child.once('exit', r), setTimeout(r, 3000)));
    return false;
  }
  /** Exit code and the last error lines the process printed. */
  exitInfo(): string {
    const c = this.gw.child;
    const errs = this.gw.output
      .filter((l) => /Error|error|throw/.test(l))
      .slice(-2)
      .map((l) => l.slice(0, 240));
    return `exit ${c.exitCode ?? c.signalCode}${errs.length ? `: ${errs.join(' | ')}` : ''}`;
  }
  async restart(): Promise<void> {
    this.replaced = await startGateway(this.f.db.dsn, this.env);
  }
}

/** Failures of one property, collected across its runs and thrown once at the end with the seed. */
export class FuzzLog {
  readonly failures: string[] = [];
  cases = 0;
  /** Cases the gateway accepted (2xx, hello.ok): how deep the generated input got. */
  accepted = 0;
  crashes = 0;
  /** Runs skipped because the time budget was spent. */
  skipped = 0;
  private readonly deadline: number;
  /** `budgetMs` (fuzzBudget): after it, `stopped` holds and the property's remaining runs do nothing. */
  constructor(
    readonly label: string,
    readonly target: FuzzTarget,
    budgetMs = Infinity,
  ) {
    this.deadline = Date.now() + budgetMs;
  }

  /** Stop generating after 3 crashes or 30 failures (the report is long enough), or when the time
   * budget is spent (each run skipped then is counted, for the log). */
  get stopped(): boolean {
    if (this.crashes >= 3 || this.failures.length >= 30) return true;
    if (Date.now() < this.deadline) return false;
    this.skipped++;
    return true;
  }

  fail(msg: string): void {
    if (!this.failures.includes(msg)) this.failures.push(msg);
  }

  /**
   * Runs a batch (`limit` at a time); `run` returns a failure text or null. If the gateway died,
   * it is restarted and the batch replayed one case at a time: the case after which the process
   * is gone is reported as the crash. Returns false when the gateway died (skip the DB check).
   */
  async batch<C>(
    cases: C[],
    limit: number,
    run: (c: C) => Promise<string | null>,
    input: (c: C) => string | Buffer | null,
    count = cases.length,
  ): Promise<boolean> {
    this.cases += count;
    const safe = (c: C) => run(c).catch((e: Error) => `test harness error: ${e.message}`);
    const at = (c: C) => {
      const i = input(c);
      return i === null ? '' : `\n    input: ${show(i)}`;
    };
    const out = await mapLimit(cases, limit, safe);
    if (await this.target.serving()) {
      out.forEach((r, i) => r && this.fail(r + at(cases[i]!)));
      return true;
    }
    this.crashes++;
    const first = this.target.exitInfo();
    if (this.target.alive()) this.target.gw.child.kill('SIGKILL'); // alive but not serving: replace it too
    await this.target.restart();
    let named = false;
    for (const c of cases) {
      const r = await safe(c);
      if (!(await this.target.serving())) {
        this.fail(`GATEWAY PROCESS ${this.target.alive() ? 'STOPPED ANSWERING /healthz' : `EXITED (${this.target.exitInfo()})`}${at(c)}`);
        named = true;
        if (this.target.alive()) this.target.gw.child.kill('SIGKILL');
        await this.target.restart();
      } else if (r) this.fail(r + at(c));
    }
    if (!named) this.fail(`gateway process exited (${first}) during a batch of ${cases.length}; no single case reproduced it alone`);
    return false;
  }

  /** Logs the case count; throws the collected failures with the seed. */
  finish(): void {
    const cut = this.skipped ? `, ${this.skipped} run(s) skipped at the time budget` : '';
    console.log(`${this.label}: ${this.cases} cases (${this.accepted} accepted), seed ${FUZZ_SEED}, ${this.failures.length} failure(s)${cut}`);
    if (this.failures.length === 0) return;
    throw new Error(
      `${this.label}: ${this.failures.length} failure(s) (seed ${FUZZ_SEED}; reproduce with ORBIT_FUZZ_SEED=${FUZZ_SEED}` +
        `${RUNS ? ` ORBIT_FUZZ_RUNS=${RUNS}` : ''})\n- ${this.failures.join('\n- ')}`,
    );
  }
}

const internalSeen = new WeakMap<GatewayProcess, number>();

/** The gateway counted no internal error (orbit_internal_errors_total, any `where`) since the last
 * check of this process: a bug caught at a boundary is answered INTERNAL or not at all, and a
 * property must not pass over it. */
export async function noInternalErrors(target: FuzzTarget, log: FuzzLog): Promise<void> {
  if (!target.alive()) return; // reported as a crash
  const text = await fetch(target.url + '/metrics', { signal: AbortSignal.timeout(5000) }).then((r) => r.text());
  let n = 0;
  for (const m of text.matchAll(/^orbit_internal_errors_total(?:\{[^}]*\})? (\d+)/gm)) n += Number(m[1]);
  const before = internalSeen.get(target.gw) ?? 0;
  internalSeen.set(target.gw, n);
  if (n === before) return;
  const lines = target.gw.output.filter((l) => l.includes('internal error')).slice(-3);
  log.fail(`the gateway logged ${n - before} internal error(s) (orbit_internal_errors_total): ${lines.map((l) => l.slice(0, 300)).join(' | ')}`);
}

/** Every worker_sessions row is closed again once every socket closed (fatal errors end sessions). */
export async function noOpenSessions(pool: Pool, log: FuzzLog): Promise<void> {
  if (log.crashes > 0) return; // a dead process leaves its rows OPEN; already reported
  const count = async () => {
    const [[row]] = (await pool.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM worker_sessions WHERE state <> 'CLOSED'`)) as unknown as [[{ n: number }]];
    return Number(row!.n);
  };
  const open = await waitForValue(count, (n) => n === 0, { timeout: 5_000, interval: 100 });
  if (open === 0) return;
  log.fail(`${open} worker_sessions rows still OPEN after every socket closed`);
}

/** A table whose rows are fingerprinted one by one: `key` names a row, `owners` the ids a change of
 * it can be attributed to (SQL expressions; '*' = any accepted case of the batch). */
export interface RowTable {
  table: string;
  key: string;
  owners: string[];
}

/** table → row key → { fingerprint of every column, owner ids }. */
export type RowPrints = Map<string, Map<string, { h: string; owners: string[] }>>;

const columnsOf = new Map<string, string[]>();

/** Every row of `tables`, fingerprinted over all its columns (read once from information_schema),
 * in one UNION ALL query: a fuzz batch takes two of these (the harness's cost per batch). */
export async function rowPrints(pool: Pool, tables: RowTable[]): Promise<RowPrints> {
  const missing = tables.map((t) => t.table).filter((t) => !columnsOf.has(t));
  if (missing.length) {
    const [rows] = await pool.query<RowDataPacket[]>(
      'SELECT TABLE_NAME AS t, COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?) ORDER BY ORDINAL_POSITION',
      [missing],
    );
    for (const r of rows) columnsOf.set(r.t, [...(columnsOf.get(r.t) ?? []), r.c as string]);
  }
  const width = Math.max(...tables.map((t) => t.owners.filter((o) => o !== '*').length));
  const parts = tables.map((t, n) => {
    const h = `MD5(CONCAT_WS('|', ${columnsOf
      .get(t.table)!
      .map((c) => `IFNULL(HEX(CAST(\`${c}\` AS BINARY)), 'N')`)
      .join(', ')}))`;
    const owners = t.owners.filter((o) => o !== '*');
    const cols = Array.from({ length: width }, (_, i) => `CAST(${owners[i] ?? 'NULL'} AS CHAR) AS o${i}`);
    return `SELECT ${n} AS n, CAST(${t.key} AS CHAR) AS k, ${h} AS h${cols.map((c) => `, ${c}`).join('')} FROM ${t.table}`;
  });
  const [rows] = await pool.query<RowDataPacket[]>(parts.join(' UNION ALL '));
  const out: RowPrints = new Map(tables.map((t) => [t.table, new Map()]));
  for (const r of rows) {
    const t = tables[Number(r.n)]!;
    const owners = Array.from({ length: width }, (_, i) => r[`o${i}`] as string | null).filter((o): o is string => o !== null);
    out.get(t.table)!.set(r.k, { h: r.h, owners: t.owners.includes('*') ? [...owners, '*'] : owners });
  }
  return out;
}

/** Rows added, removed or changed between two fingerprints that no accepted case accounts for: a
 * row is accounted for when one of its owner ids (before or after) is in `touched` ('*' when the
 * batch accepted anything). Refused cases must change nothing, so every other change is one. */
export function unaccounted(before: RowPrints, after: RowPrints, touched: Set<string>): string[] {
  const out: string[] = [];
  for (const [table, a] of after) {
    const b = before.get(table)!;
    const keys = new Set([...a.keys(), ...b.keys()]);
    for (const k of keys) {
      const x = b.get(k);
      const y = a.get(k);
      if (x && y && x.h === y.h) continue;
      const owners = [...(x?.owners ?? []), ...(y?.owners ?? [])];
      if (owners.some((o) => touched.has(o))) continue;
      out.push(`${table} row ${k} ${!x ? 'added' : !y ? 'removed' : 'changed'} (owners ${[...new Set(owners)].join(', ')})`);
    }
  }
  return out;
}

/** The ids a case names (32-hex strings in its path, body and response) and its idempotency key. */
export function namedIds(...texts: (string | Buffer | undefined)[]): string[] {
  const ids: string[] = [];
  for (const t of texts) if (t !== undefined) ids.push(...((Buffer.isBuffer(t) ? t.toString('latin1') : t).match(/[0-9a-f]{32}/g) ?? []));
  return ids;
}
