// Small shared pieces. Every API value is rendered as a text child (Preact escapes it): no
// dangerouslySetInnerHTML anywhere in the console.
import type { ButtonHTMLAttributes, ComponentChildren, InputHTMLAttributes } from 'preact';
import { useState } from 'preact/hooks';
import type { MinuteBucket } from '../../../protocol/http-views.js';
import type { ApiError } from './api.js';
import { href } from './router.js';

/** The badge colour of each state (tasks, attempts, deliveries, runs, steps, lifecycles, workers). */
const STATES_BY_CLASS: Record<string, string[]> = {
  wait: ['WAITING', 'RETRY', 'PENDING', 'READY'],
  lease: ['LEASED', 'WAITING_SIGNAL'],
  run: ['RUNNING', 'ACTIVE'],
  review: ['NEEDS_REVIEW', 'UNKNOWN', 'IN_REVIEW', 'PAUSED', 'paused', 'draining'],
  ok: ['SUCCEEDED', 'ACKED', 'active'],
  bad: ['FAILED', 'DEADLINE_EXCEEDED'],
  off: ['CANCELLED', 'EXPIRED', 'SKIPPED', 'retired'],
};
const STATE_CLASS = new Map(Object.entries(STATES_BY_CLASS).flatMap(([cls, states]) => states.map((s) => [s, cls] as const)));

/** retired, paused or active: the lifecycle of queues, subscriptions, schedules and workflows. */
export function lifecycle(x: { retired_at?: string | null; paused?: boolean }): string {
  return x.retired_at ? 'retired' : x.paused ? 'paused' : 'active';
}

export function Badge({ state }: { state: string }) {
  return <span class={`badge b-${STATE_CLASS.get(state) ?? 'off'}`}>{state}</span>;
}

export function ErrorBox({ error, title }: { error: ApiError | undefined; title?: string }) {
  if (!error) return null;
  const blockers = error.details?.blockers as { reason: string; count: number }[] | undefined;
  return (
    <div class="error" role="alert">
      <div>
        <strong>{title ?? 'Request failed'}: </strong>
        <code class="code">{error.code}</code> <span class="msg">{error.message}</span>
      </div>
      {blockers && blockers.length > 0 && (
        <ul class="blockers">
          {blockers.map((b) => (
            <li key={b.reason}>
              <code>{b.reason}</code>: {String(b.count)}
            </li>
          ))}
        </ul>
      )}
      {error.details?.field !== undefined && (
        <div class="muted">
          field: <code>{String(error.details.field)}</code>
        </div>
      )}
      <div class="muted">
        request_id: <code>{error.requestId ?? '—'}</code>
      </div>
    </div>
  );
}

export interface Column<T> {
  label: string;
  cell: (row: T) => ComponentChildren;
  class?: string;
}

/** On narrow screens each row becomes a card, so they never scroll sideways. */
export function Table<T>({ rows, cols, empty, rowKey }: { rows: T[]; cols: Column<T>[]; empty?: string; rowKey: (r: T) => string }) {
  if (rows.length === 0) return <p class="muted empty">{empty ?? 'Nothing here.'}</p>;
  return (
    <table class="grid">
      <thead>
        <tr>
          {cols.map((c) => (
            <th key={c.label} class={c.class}>
              {c.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={rowKey(r)}>
            {cols.map((c) => (
              <td key={c.label} data-label={c.label} class={c.class}>
                {c.cell(r)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Fields({ items }: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="fields">
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v === null || v === undefined || v === '' ? <span class="muted">—</span> : v}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{value === undefined ? '—' : JSON.stringify(value, null, 2)}</pre>;
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card">
      <header class="card-h">
        <h2>{title}</h2>
        {actions && <div class="card-a">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  const d = (Date.parse(iso) - Date.now()) / 1000;
  const a = Math.abs(d);
  const txt = a < 60 ? `${Math.round(a)}s` : a < 3600 ? `${Math.round(a / 60)}m` : a < 86400 ? `${Math.round(a / 3600)}h` : `${Math.round(a / 86400)}d`;
  return (
    <time dateTime={iso} title={iso}>
      {d < 0 ? `${txt} ago` : `in ${txt}`}
    </time>
  );
}

/** The short form of an id; with `page`, a link to that page of it carrying the `data-*` given. */
export function Id({ id, page, ...data }: { id: string; page?: string; [attr: `data-${string}`]: string }) {
  const short = (
    <code class="id" title={id}>
      {id.slice(0, 8)}…
    </code>
  );
  return page ? (
    <a href={href(page, id)} {...data}>
      {short}
    </a>
  ) : (
    short
  );
}

/** A resource key, linked to its page; a dash for none. */
export function KeyLink({ k }: { k: string | undefined }) {
  return k === undefined ? (
    <span class="muted">—</span>
  ) : (
    <a class="key" href={href('key', k)}>
      {k}
    </a>
  );
}

export function Copy({ text }: { text: string }) {
  const [ok, setOk] = useState(false);
  return (
    <button
      type="button"
      class="btn small"
      onClick={() => void navigator.clipboard?.writeText(text).then(() => (setOk(true), setTimeout(() => setOk(false), 1200)))}
    >
      {ok ? 'Copied' : 'Copy'}
    </button>
  );
}

/** A form's submit handler that stays on the page. */
export function onSubmit(fn: () => void): (e: Event) => void {
  return (e) => (e.preventDefault(), fn());
}

export function Loading({ what }: { what?: string }) {
  return <p class="muted">Loading{what ? ` ${what}` : ''}…</p>;
}

const SERIES: [keyof Omit<MinuteBucket, 'minute'>, string][] = [
  ['succeeded', 's-ok'],
  ['failed', 's-bad'],
  ['deadline_exceeded', 's-dead'],
  ['cancelled', 's-off'],
];

/** Stacked bars of the 15 one-minute outcome buckets, oldest left. */
export function OutcomeChart({ minutes }: { minutes: MinuteBucket[] }) {
  const w = 150;
  const h = 36;
  const max = Math.max(1, ...minutes.map((m) => m.succeeded + m.failed + m.cancelled + m.deadline_exceeded));
  const bw = w / minutes.length;
  const total = minutes.reduce((n, m) => n + m.succeeded + m.failed + m.cancelled + m.deadline_exceeded, 0);
  return (
    <figure class="chart" aria-label={`outcomes over 15 minutes: ${total}`}>
      <svg viewBox={`0 0 ${w} ${h}`} preserveAspectRatio="none" role="img">
        {minutes.map((m, i) => {
          let y = h;
          return (
            <g key={m.minute}>
              <title>{`${m.minute.slice(11, 16)} UTC — ${m.succeeded} succeeded, ${m.failed} failed, ${m.deadline_exceeded} deadline, ${m.cancelled} cancelled`}</title>
              <rect x={i * bw} y={0} width={bw} height={h} class="s-bg" />
              {SERIES.map(([k, cls]) => {
                const bh = (m[k] / max) * (h - 2);
                y -= bh;
                return bh > 0 ? <rect key={k} x={i * bw + 1} y={y} width={bw - 2} height={bh} class={cls} /> : null;
              })}
            </g>
          );
        })}
      </svg>
      <figcaption class="muted">{total} outcomes / 15 min</figcaption>
    </figure>
  );
}

export function Button(props: ButtonHTMLAttributes<HTMLButtonElement> & { why?: string; 'data-act'?: string }) {
  const { why, disabled, ...rest } = props;
  return <button type="button" class="btn" {...rest} disabled={disabled || !!why} title={why ?? (props.title as string | undefined)} />;
}

export function PagerBar({ pager, nextCursor }: { pager: import('./hooks.js').Pager; nextCursor: string | null | undefined }) {
  return (
    <div class="row pager">
      <Button disabled={pager.page === 1} onClick={pager.first}>
        First
      </Button>
      <Button disabled={pager.page === 1} onClick={pager.prev}>
        Previous
      </Button>
      <span class="muted">page {pager.page}</span>
      <Button disabled={!nextCursor} onClick={() => pager.next(nextCursor)} data-act="next-page">
        Next
      </Button>
    </div>
  );
}

/** `options` are values, or [value, text] pairs; `any` is the text of a first, empty choice. With a
 * `label`, the select is inside its label element. */
export function Select(p: {
  name: string;
  value: string;
  set: (v: string) => void;
  options: readonly (string | readonly [string, string])[];
  any?: string;
  disabled?: boolean;
  label?: string;
}) {
  const select = (
    <select name={p.name} value={p.value} onChange={(e) => p.set(e.currentTarget.value)} disabled={p.disabled}>
      {p.any !== undefined && <option value="">{p.any}</option>}
      {p.options.map((o) => {
        const [v, text] = typeof o === 'string' ? [o, o] : o;
        return (
          <option key={v} value={v}>
            {text}
          </option>
        );
      })}
    </select>
  );
  return p.label === undefined ? (
    select
  ) : (
    <label>
      {p.label}
      {select}
    </label>
  );
}

/** A labelled text input; `set` gets each edit. */
export function TextField({ label, set, ...input }: { label: string; set: (v: string) => void } & InputHTMLAttributes<HTMLInputElement>) {
  return (
    <label>
      {label}
      <input {...input} onInput={(e) => set(e.currentTarget.value)} />
    </label>
  );
}
