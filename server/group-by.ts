/** `items` grouped by `keyOf`, keys in first-seen order, each group in input order (Map.groupBy is
 * Node 21's). Linear: one push per item. */
export function groupBy<T, K, V = T>(items: Iterable<T>, keyOf: (item: T) => K, valueOf: (item: T) => V = (item) => item as unknown as V): Map<K, V[]> {
  const out = new Map<K, V[]>();
  for (const item of items) {
    const k = keyOf(item);
    const list = out.get(k);
    if (list) list.push(valueOf(item));
    else out.set(k, [valueOf(item)]);
  }
  return out;
}
