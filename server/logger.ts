import { pino, type Logger } from 'pino';

/** JSON lines to stdout; never tokens or payloads (redacted by path in case one slips in). */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { ...base },
    redact: { paths: ['token', '*.token', 'authorization', '*.authorization', 'payload', '*.payload'], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
