import os from 'node:os';
import net from 'node:net';
import { nanoid } from 'nanoid';
import { parseDsn } from './db/pool.js';

export interface Config {
  mysqlDsn: string;
  httpHost: string;
  httpPort: number;
  nodeId: string;
  logLevel: string;
  /** Largest HTTP body accepted (bytes); larger → 413. A 256 KiB payload fits with room for escapes. */
  maxBodyBytes: number;
  /** Largest POST /v1/tasks:batch body (bytes); larger → 413. */
  maxBatchBodyBytes: number;
  /** Largest worker frame (bytes). */
  maxFrameBytes: number;
  /** Sweeper period (ms). */
  sweepIntervalMs: number;
  /** A worker must send hello within this (ms). */
  helloTimeoutMs: number;
  /** WebSocket ping period (ms); two missed pongs close the session. */
  pingIntervalMs: number;
  /** Result event retention (seconds). */
  eventRetentionSeconds: number;
  /** ORBIT_FAULT_INJECTION=1: test-only fault injection (server/faults.ts). */
  faultInjection: boolean;
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Reads the environment. Throws one line describing the first invalid variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const dsn = env.ORBIT_MYSQL_DSN;
  if (!dsn) throw new Error('ORBIT_MYSQL_DSN is not set (expected mysql://user:pass@host:port/db); `npm start` runs an embedded database');
  parseDsn(dsn); // throws one line naming ORBIT_MYSQL_DSN
  const addr = env.ORBIT_HTTP_ADDR ?? '127.0.0.1:8080';
  const m = /^(.*):(\d{1,5})$/.exec(addr);
  if (!m || Number(m[2]) > 65535) throw new Error(`ORBIT_HTTP_ADDR must be host:port (port 0-65535), got ${JSON.stringify(addr)}`);
  const rawHost = m[1]!;
  const bracketed = /^\[(.*)\]$/.exec(rawHost);
  const hostOk = bracketed
    ? net.isIPv6(bracketed[1]!)
    : rawHost === '' || net.isIPv4(rawHost) || /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(rawHost);
  if (!hostOk) throw new Error(`ORBIT_HTTP_ADDR host must be an IPv4 address, [IPv6] or a host name, got ${JSON.stringify(addr)}`);
  const logLevel = env.ORBIT_LOG_LEVEL ?? 'info';
  if (!LEVELS.includes(logLevel)) throw new Error(`ORBIT_LOG_LEVEL must be one of ${LEVELS.join(', ')}`);
  const nodeId = env.ORBIT_NODE_ID ?? `${os.hostname()}-${process.pid}-${nanoid(6)}`;
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(nodeId)) throw new Error('ORBIT_NODE_ID must be 1-128 chars of [A-Za-z0-9._:-]');
  const intVar = (name: string, def: number, min: number, max: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer in ${min}..${max}`);
    return n;
  };
  return {
    mysqlDsn: dsn,
    httpHost: bracketed ? bracketed[1]! : rawHost || '127.0.0.1',
    httpPort: Number(m[2]),
    nodeId,
    logLevel,
    maxBodyBytes: intVar('ORBIT_MAX_BODY_BYTES', 1024 * 1024, 300 * 1024, 64 * 1024 * 1024),
    maxBatchBodyBytes: intVar('ORBIT_MAX_BATCH_BODY_BYTES', 16 * 1024 * 1024, 300 * 1024, 256 * 1024 * 1024),
    maxFrameBytes: intVar('ORBIT_MAX_FRAME_BYTES', 1024 * 1024, 300 * 1024, 64 * 1024 * 1024),
    sweepIntervalMs: intVar('ORBIT_SWEEP_INTERVAL_MS', 500, 50, 1000),
    helloTimeoutMs: intVar('ORBIT_HELLO_TIMEOUT_MS', 10_000, 100, 600_000),
    pingIntervalMs: intVar('ORBIT_PING_INTERVAL_MS', 15_000, 100, 600_000),
    eventRetentionSeconds: intVar('ORBIT_EVENT_RETENTION_SECONDS', 7 * 86400, 60, 365 * 86400),
    faultInjection: env.ORBIT_FAULT_INJECTION === '1',
  };
}
