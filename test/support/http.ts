// A raw HTTP client for contract tests (fetch, no SDK): returns status, headers and parsed body.
export interface RawResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export async function call(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; rawBody?: string | Buffer; key?: string; headers?: Record<string, string> } = {},
): Promise<RawResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  if (opts.key !== undefined) headers['idempotency-key'] = opts.key;
  let body: string | Buffer | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined && !('content-type' in headers)) headers['content-type'] = 'application/json';
  // A Buffer body is sent as its bytes (BodyInit wants a Uint8Array view in the DOM typings).
  const res = await fetch(base + path, { method, headers, body: typeof body === 'string' || body === undefined ? body : new Uint8Array(body) });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON (metrics) */
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

let n = 0;
export function ikey(prefix = 'k'): string {
  n++;
  return `${prefix}-${process.pid}-${Date.now()}-${n}`;
}
