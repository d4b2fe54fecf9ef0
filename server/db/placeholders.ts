// Placeholder lists for statements over a variable number of values or rows: the values still go
// through mysql2's escaping; only the `?` marks are built here, from a count.

/** `?,?,?`: `n` placeholders, for `IN (…)`. */
export function placeholders(n: number): string {
  // repeat, not Array.from(…).join: a claim or result batch builds several lists of up to ~100.
  return n > 0 ? '?,'.repeat(n - 1) + '?' : '';
}

/** `(?, ?), (?, ?)`: `n` copies of one row's text, for a multi-row `VALUES` or a row `IN (…)`. */
export function placeholderRows(n: number, row: string): string {
  return Array.from({ length: n }, () => row).join(', ');
}
