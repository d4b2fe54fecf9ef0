// Every environment variable of server/ is parsed here (docs/operations.md's configuration table lists them,
// checked by test/unit-config.test.ts). A bad value stops the process at start with one line naming
// the variable, what it expects and what it got — never a NaN or a silently ignored setting.
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { nanoid } from 'nanoid';
import { DEFAULT_MAX_BATCH_BODY_BYTES, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_FRAME_BYTES, MAX_PAYLOAD_BYTES } from '@orbit/protocol/limits';
import { parseDsn } from './db/pool.js';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const DEFAULT_HTTP_ADDR = '127.0.0.1:8080';
const MIB = 1024 * 1024;
/** Smallest body and frame limit: room for a MAX_PAYLOAD_BYTES payload plus the rest of its body. */
const MIN_BODY_BYTES = MAX_PAYLOAD_BYTES + 44 * 1024;

/** The integer variables: config field → [variable, default, min, max]. */
const INT_VARS = {
  maxBodyBytes: ['ORBIT_MAX_BODY_BYTES', DEFAULT_MAX_BODY_BYTES, MIN_BODY_BYTES, 64 * MIB],
  maxBatchBodyBytes: ['ORBIT_MAX_BATCH_BODY_BYTES', DEFAULT_MAX_BATCH_BODY_BYTES, MIN_BODY_BYTES, 256 * MIB],
  maxFrameBytes: ['ORBIT_MAX_FRAME_BYTES', DEFAULT_MAX_FRAME_BYTES, MIN_BODY_BYTES, 64 * MIB],
  sweepIntervalMs: ['ORBIT_SWEEP_INTERVAL_MS', 500, 50, 1000],
  helloTimeoutMs: ['ORBIT_HELLO_TIMEOUT_MS', 10_000, 100, 600_000],
  /** Two missed pongs close the session. */
  pingIntervalMs: ['ORBIT_PING_INTERVAL_MS', 15_000, 100, 600_000],
  /** A session whose ping stays unanswered longer than this gets no new work until it answers. A
   * live worker answers within a round trip (even a full GC rarely pauses a second), and a stopped
   * one is found before its next batch rather than at the next ping. */
  pongTimeoutMs: ['ORBIT_PONG_TIMEOUT_MS', 1_000, 50, 60_000],
  eventRetentionSeconds: ['ORBIT_EVENT_RETENTION_SECONDS', 7 * 86400, 60, 365 * 86400],
  /** Frames of one session received and not yet answered at which reading its socket pauses. */
  sessionMaxFramesInFlight: ['ORBIT_SESSION_MAX_FRAMES_IN_FLIGHT', 64, 1, 65_536],
  /** Bytes of one session's frames in flight plus its unsent replies at which reading pauses. */
  sessionMaxBytesInFlight: ['ORBIT_SESSION_MAX_BYTES_IN_FLIGHT', 16 * MIB, 64 * 1024, 1024 * MIB],
  /** Worker sessions' own transactions (renew, hello, session row) holding a pooled connection at
   * once, over all applications and per application. Half of the default pool, a quarter for one
   * application: submits, frame batches, claims and commands always find a connection. */
  sessionTxSlots: ['ORBIT_SESSION_TX_SLOTS', 8, 1, 1024],
  sessionTxSlotsPerApplication: ['ORBIT_SESSION_TX_SLOTS_PER_APPLICATION', 4, 1, 1024],
} as const satisfies Record<string, readonly [string, number, number, number]>;

export interface Config extends Record<keyof typeof INT_VARS, number> {
  mysqlDsn: string;
  httpHost: string;
  httpPort: number;
  nodeId: string;
  /** ORBIT_NODE_ID was set, not generated: with several processes it names them (processEnv). */
  nodeIdSet: boolean;
  logLevel: string;
  /** Gateway processes of this node sharing its port (server/cli/processes.ts). */
  processes: number;
}

const OTHER_VARS = ['ORBIT_MYSQL_DSN', 'ORBIT_HTTP_ADDR', 'ORBIT_NODE_ID', 'ORBIT_LOG_LEVEL', 'ORBIT_HOME', 'ORBIT_URL', 'ORBIT_PROCESSES'] as const;
type EnvVar = (typeof OTHER_VARS)[number] | (typeof INT_VARS)[keyof typeof INT_VARS][0];
/** The variables this module reads, for the documentation check (test/unit-config.test.ts). */
export const ENV_VARS: readonly EnvVar[] = [...OTHER_VARS, ...Object.values(INT_VARS).map(([name]) => name)];

type Env = Partial<Record<string, string | undefined>>;

/** Unset and empty both mean "use the default". ORBIT_HTTP_ADDR, ORBIT_LOG_LEVEL and ORBIT_NODE_ID
 * are read with `env[name]` instead: "" is refused there, as a value nobody means. */
function raw(env: Env, name: EnvVar): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function intVar(env: Env, name: EnvVar, def: number, min: number, max: number): number {
  const v = raw(env, name);
  if (v === undefined) return def;
  // Number() alone would take '0x10', ' 12 ' and '1e3'.
  const n = /^-?[0-9]{1,16}$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer in ${min}..${max}, got ${JSON.stringify(v)}`);
  return n;
}

export const MAX_PROCESSES = 64;

/** An integer in 1..MAX_PROCESSES, or `auto`: the cores this process may use. */
function processesVar(env: Env): number {
  const v = raw(env, 'ORBIT_PROCESSES');
  if (v === undefined) return 1;
  if (v === 'auto') return Math.min(MAX_PROCESSES, Math.max(1, os.availableParallelism()));
  const n = /^[0-9]{1,3}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 1 && n <= MAX_PROCESSES)) throw new Error(`ORBIT_PROCESSES must be auto or an integer in 1..${MAX_PROCESSES}, got ${JSON.stringify(v)}`);
  return n;
}

/** ORBIT_MYSQL_DSN, checked; undefined means the embedded database. */
export function configuredDsn(env: Env = process.env): string | undefined {
  const dsn = raw(env, 'ORBIT_MYSQL_DSN');
  if (dsn !== undefined) parseDsn(dsn); // throws one line naming ORBIT_MYSQL_DSN
  return dsn;
}

/** Where `npm start` keeps the embedded database and development credentials. */
export function orbitHome(env: Env = process.env): string {
  return path.resolve(raw(env, 'ORBIT_HOME') ?? '.orbit');
}

/** The gateway URL that `orbit-admin bootstrap` writes into credentials files. */
export function gatewayUrl(env: Env = process.env): string {
  const url = raw(env, 'ORBIT_URL');
  if (url === undefined) return `http://${env.ORBIT_HTTP_ADDR ?? DEFAULT_HTTP_ADDR}`;
  const u = URL.canParse(url) ? new URL(url) : null;
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) throw new Error(`ORBIT_URL must be an http:// or https:// URL, got ${JSON.stringify(url)}`);
  return url;
}

function listenAddress(env: Env): { host: string; port: number } {
  const addr = env.ORBIT_HTTP_ADDR ?? DEFAULT_HTTP_ADDR;
  const m = /^(.*):(\d{1,5})$/.exec(addr);
  if (!m || Number(m[2]) > 65535) throw new Error(`ORBIT_HTTP_ADDR must be host:port (port 0-65535), got ${JSON.stringify(addr)}`);
  const rawHost = m[1]!;
  const bracketed = /^\[(.*)\]$/.exec(rawHost);
  const hostOk = bracketed
    ? net.isIPv6(bracketed[1]!)
    : rawHost === '' ||
      net.isIPv4(rawHost) ||
      /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(rawHost);
  if (!hostOk) throw new Error(`ORBIT_HTTP_ADDR host must be an IPv4 address, [IPv6] or a host name, got ${JSON.stringify(addr)}`);
  return { host: bracketed ? bracketed[1]! : rawHost || '127.0.0.1', port: Number(m[2]) };
}

/** Throws one line describing the first invalid variable. `overrides.mysqlDsn` stands in for
 * ORBIT_MYSQL_DSN (the embedded database). */
export function loadConfig(env: Env = process.env, overrides: { mysqlDsn?: string } = {}): Config {
  const dsn = overrides.mysqlDsn ?? configuredDsn(env);
  if (!dsn) throw new Error('ORBIT_MYSQL_DSN is not set (expected mysql://user:pass@host:port/db); `npm start` runs an embedded database');
  const { host, port } = listenAddress(env);
  const logLevel = env.ORBIT_LOG_LEVEL ?? 'info';
  if (!LEVELS.includes(logLevel)) throw new Error(`ORBIT_LOG_LEVEL must be one of ${LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  const nodeId = env.ORBIT_NODE_ID ?? `${os.hostname()}-${process.pid}-${nanoid(6)}`;
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(nodeId)) throw new Error(`ORBIT_NODE_ID must be 1-128 chars of [A-Za-z0-9._:-], got ${JSON.stringify(nodeId)}`);
  const processes = processesVar(env);
  if (processes > 1 && env.ORBIT_NODE_ID !== undefined && `${nodeId}-${processes}`.length > 128)
    throw new Error(
      `ORBIT_NODE_ID must leave room for the process suffix "-${processes}" within 128 chars with ORBIT_PROCESSES=${processes}, got ${JSON.stringify(nodeId)}`,
    );
  const ints = Object.fromEntries(Object.entries(INT_VARS).map(([field, [name, def, min, max]]) => [field, intVar(env, name, def, min, max)]));
  return {
    mysqlDsn: dsn,
    httpHost: host,
    httpPort: port,
    nodeId,
    nodeIdSet: env.ORBIT_NODE_ID !== undefined,
    logLevel,
    ...(ints as Record<keyof typeof INT_VARS, number>),
    processes,
  };
}

/** The environment of gateway process `slot` (1-based) of a multi-process node. The address is
 * passed as configured, `:0` included: the processes share the socket the primary bound. A set
 * ORBIT_NODE_ID becomes `<id>-<slot>`, stable across restarts of the slot. */
export function processEnv(config: Config, slot: number): Record<string, string> {
  const h = config.httpHost;
  const env: Record<string, string> = {
    ORBIT_MYSQL_DSN: config.mysqlDsn,
    ORBIT_HTTP_ADDR: `${h.includes(':') ? `[${h}]` : h}:${config.httpPort}`,
    ORBIT_PROCESSES: '1',
  };
  if (config.nodeIdSet) env.ORBIT_NODE_ID = `${config.nodeId}-${slot}`;
  return env;
}
