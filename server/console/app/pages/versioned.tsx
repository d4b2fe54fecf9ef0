// What the schedule and workflow pages share.
import type { ComponentChildren } from 'preact';
import { ActionStatus } from '../actions.js';
import type { ApiError } from '../api.js';
import { useAction, type Pager } from '../hooks.js';
import { Button, ErrorBox, Json, Loading, PagerBar, Section, Table, Time, type Column } from '../ui.js';
import { JsonField, useJsonDraft } from './json-editor.js';

/** A server without the API (an older node) answers its list with 404 NOT_FOUND. */
export function unavailable(e: ApiError | undefined): boolean {
  return e?.status === 404 && e.code === 'NOT_FOUND';
}

export function Unavailable({ what, api }: { what: string; api: string }) {
  return (
    <p class="notice" data-unavailable>
      {what} are not available on this server (it has no {api} API).
    </p>
  );
}

export function DefinitionList<T extends { id: string }>(p: {
  title: string;
  notice: ComponentChildren;
  error: ApiError | undefined;
  page: { rows: T[]; next_cursor: string | null } | undefined;
  pager: Pager;
  empty: string;
  cols: Column<T>[];
}) {
  return (
    <Section title={p.title}>
      {unavailable(p.error) ? p.notice : <ErrorBox error={p.error} />}
      {!p.page && !p.error && <Loading />}
      {p.page && (
        <>
          <Table rows={p.page.rows} rowKey={(r) => r.id} empty={p.empty} cols={p.cols} />
          <PagerBar pager={p.pager} nextCursor={p.page.next_cursor} />
        </>
      )}
    </Section>
  );
}

export function VersionHistory<V extends { number: number; created_at: string }>(p: {
  versions: V[];
  current: number;
  error: ApiError | undefined;
  summary?: (v: V) => ComponentChildren;
  body: (v: V) => unknown;
}) {
  return (
    <Section title="Versions">
      <ErrorBox error={p.error} />
      {p.versions
        .slice()
        .reverse()
        .map((v) => (
          <details key={v.number} open={v.number === p.current} data-version={v.number}>
            <summary>
              version {v.number} — {p.summary?.(v)}
              <Time iso={v.created_at} />
            </summary>
            <Json value={p.body(v)} />
          </details>
        ))}
    </Section>
  );
}

/** `preview` is given the edited value and the last refusal. */
export function PublishVersion(p: {
  path: string;
  definition: { revision: string; current_version: number };
  initial: unknown;
  why?: string;
  preview?: (value: unknown, error: ApiError | undefined) => ComponentChildren;
}) {
  const draft = useJsonDraft(JSON.stringify(p.initial, null, 2));
  const publish = useAction<{ expected_revision: string; version: unknown }>(p.path);
  const { revision } = p.definition;
  const body = { expected_revision: revision, version: draft.value };
  const field = <JsonField name="version" label="Version (JSON)" draft={draft} error={publish.error} prefix="version" rows={16} disabled={!!p.why} />;
  return (
    <Section title="Publish a new version">
      {p.preview ? (
        <div class="two">
          {field}
          <div>
            <span class="muted">preview</span>
            {p.preview(draft.value, publish.error)}
          </div>
        </div>
      ) : (
        field
      )}
      <div class="row">
        <Button why={p.why} disabled={publish.busy || !!draft.problem} onClick={() => void publish.run(body)} data-act="publish">
          Publish version {p.definition.current_version + 1}
        </Button>
        <span class="muted">expected revision {revision}</span>
      </div>
      <ActionStatus action={publish} body={body} what="Publish" />
    </Section>
  );
}
