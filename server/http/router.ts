import { OrbitError } from '@orbit/protocol/errors';
import { isId } from '@orbit/protocol/ids';
import type { RequestCtx, Reply } from './context.js';

export interface Route {
  method: 'GET' | 'POST';
  /** e.g. `/v1/tasks/{id}:cancel` */
  template: string;
  auth: boolean;
  /** The handler checks the credential's liveness in its own transaction, so the request may be
   * authenticated from the node's credential cache. */
  checksCredential?: true;
  handle: (ctx: RequestCtx) => Promise<Reply | RawReply>;
}

export interface RawReply {
  raw: true;
  status: number;
  contentType: string;
  /** Sent as well, e.g. a static page's security headers. */
  headers?: Record<string, string>;
  body: string | Buffer;
}

interface Compiled extends Route {
  regex: RegExp;
  keys: string[];
}

export class Router {
  private readonly routes: Compiled[] = [];

  add(route: Route): this {
    const keys: string[] = [];
    const pattern = route.template
      .split(/(\{[a-z_]+\})/)
      .map((part) => {
        const m = /^\{([a-z_]+)\}$/.exec(part);
        if (m) {
          keys.push(m[1]!);
          return '([^/:]+)';
        }
        return part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
      })
      .join('');
    this.routes.push({ ...route, regex: new RegExp(`^${pattern}$`), keys });
    return this;
  }

  /** The OpenAPI document is checked against it. */
  list(): readonly Route[] {
    return this.routes;
  }

  /** `allow`: the methods of the path when it exists under other methods only. */
  match(method: string, path: string): { route: Route; params: Record<string, string> } | { allow: string[] } | null {
    const allow = new Set<string>();
    for (const r of this.routes) {
      const m = r.regex.exec(path);
      if (!m) continue;
      if (r.method !== method) {
        allow.add(r.method);
        continue;
      }
      const params: Record<string, string> = {};
      r.keys.forEach((k, i) => {
        try {
          params[k] = decodeURIComponent(m[i + 1]!);
        } catch {
          throw new OrbitError('INVALID_ARGUMENT', 'malformed percent-encoding in the request path', { field: k });
        }
      });
      // A malformed id can never exist: NOT_FOUND before a handler and its SQL run.
      if (params.id !== undefined && !isId(params.id)) throw new OrbitError('NOT_FOUND', 'no resource with this id (ids are 32 lowercase hex characters)');
      return { route: r, params };
    }
    return allow.size > 0 ? { allow: [...allow].sort() } : null;
  }
}
