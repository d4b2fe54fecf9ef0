// Length limits of protocol strings that are counted in UTF-8 bytes (a WebSocket close reason is
// at most 123 bytes, RFC 6455 §5.5). Cutting by UTF-16 units is wrong twice: 120 units of emoji
// are 240 bytes (ws throws a RangeError from close()), and a cut inside a surrogate pair leaves a
// lone surrogate that is not valid UTF-8.

/** The longest prefix of `s` whose UTF-8 encoding fits in `maxBytes`, cut on a code-point
 * boundary. Lone surrogates (which encode as 3 bytes of U+FFFD) are counted as such. */
export function truncateUtf8(s: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  // Fast path: every UTF-16 unit encodes to at most 3 bytes.
  if (s.length * 3 <= maxBytes) return s;
  let bytes = 0;
  let end = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    const n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + n > maxBytes) break;
    bytes += n;
    end += ch.length;
  }
  return s.slice(0, end);
}

/** The largest close reason RFC 6455 allows (defined in limits.ts). */
export { MAX_CLOSE_REASON_BYTES } from './limits.js';
