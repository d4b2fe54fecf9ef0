// Hash routes (`#/queues/<id>`): static hosting needs no server routes, and nothing secret is ever
// part of a route (the token stays in sessionStorage).
import { useEffect, useState } from 'preact/hooks';
import { withQuery } from './api.js';

export interface Route {
  page: string;
  id?: string;
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const [path = '', qs = ''] = raw.split('?', 2);
  const [page = 'overview', ...rest] = path.split('/').filter(Boolean);
  let id: string | undefined;
  try {
    id = rest.length ? decodeURIComponent(rest.join('/')) : undefined;
  } catch {
    id = undefined;
  }
  return { page, id, query: new URLSearchParams(qs) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function href(page: string, id?: string, query?: Record<string, string | undefined>): string {
  return withQuery(`#/${page}` + (id === undefined ? '' : `/${encodeURIComponent(id)}`), query ?? {});
}
