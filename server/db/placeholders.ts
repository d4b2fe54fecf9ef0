// Placeholder lists for statements over a variable number of values or rows.

/** `?,?,?`: `n` placeholders, for `IN (…)`. */
export function placeholders(n: number): string {
  return n > 0 ? '?,'.repeat(n - 1) + '?' : '';
}

/** `(?, ?), (?, ?)`: `n` copies of one row's text, for a multi-row `VALUES` or a row `IN (…)`. */
export function placeholderRows(n: number, row: string): string {
  return Array.from({ length: n }, () => row).join(', ');
}
