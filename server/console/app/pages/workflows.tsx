// Workflows: definitions, runs by state, and a definition's versions, run start and publish.
import { useEffect, useState } from 'preact/hooks';
import { WORKFLOW_RUN_STATES } from '../../../../protocol/states.js';
import type { StartWorkflowRunBody } from '../../../../protocol/workflow-schemas.js';
import type { Workflow, WorkflowRunReceipt, WorkflowRunSummary, WorkflowVersion } from '../../../../protocol/workflow-views.js';
import { ActionStatus } from '../actions.js';
import { enc, type ApiError } from '../api.js';
import { useAction, useGet, usePage } from '../hooks.js';
import { href } from '../router.js';
import { lacking, type SessionInfo } from '../session.js';
import { Badge, Button, ErrorBox, Fields, Id, lifecycle, Loading, onSubmit, PagerBar, Section, Select, Table, TextField, Time } from '../ui.js';
import { JsonField, useJsonDraft } from './json-editor.js';
import { WorkflowGraph } from './workflow-graph.js';
import { DefinitionList, PublishVersion, Unavailable, VersionHistory, unavailable } from './versioned.js';

const UNAVAILABLE = <Unavailable what="Workflows" api="/v1/workflows" />;

export function WorkflowList({ query }: { query: URLSearchParams }) {
  const [list, pager] = usePage<{ workflows: Workflow[] }>('/v1/workflows', {}, '100');
  return (
    <>
      <DefinitionList
        title="Workflows"
        notice={UNAVAILABLE}
        error={list.error}
        page={list.data && { rows: list.data.workflows, next_cursor: list.data.next_cursor }}
        pager={pager}
        empty="No workflows. Publish one with POST /v1/workflows (see the README)."
        cols={[
          { label: 'name', cell: (w) => <a href={href('workflows', w.id)}>{w.name}</a> },
          { label: 'state', cell: (w) => <Badge state={lifecycle(w)} /> },
          { label: 'version', class: 'num', cell: (w) => w.current_version },
          { label: 'revision', class: 'num', cell: (w) => w.revision },
          { label: 'updated', cell: (w) => <Time iso={w.updated_at} /> },
        ]}
      />
      <RunList query={query} workflows={list.data?.workflows ?? []} />
    </>
  );
}

/** The filters live in the route, so a view can be linked. */
function RunList({ query, workflows, fixed }: { query: URLSearchParams; workflows: Workflow[]; fixed?: string }) {
  const names = new Map(workflows.map((w) => [w.id, w.name]));
  const state = query.get('state') ?? '';
  const workflowId = fixed ?? query.get('workflow_id') ?? '';
  const [draft, setDraft] = useState({ state, workflow_id: workflowId });
  const [runs, pager] = usePage<{ runs: WorkflowRunSummary[] }>('/v1/workflow-runs', { workflow_id: workflowId, state });
  const apply = onSubmit(() => {
    pager.first();
    location.hash = href('workflows', fixed, fixed ? { state: draft.state } : draft);
  });
  return (
    <Section title="Runs">
      <form class="filters" onSubmit={apply} data-run-filters>
        {!fixed && (
          <Select
            label="Workflow"
            name="workflow_id"
            value={draft.workflow_id}
            set={(v) => setDraft({ ...draft, workflow_id: v })}
            any="any"
            options={workflows.map((w) => [w.id, w.name] as const)}
          />
        )}
        <Select label="State" name="run_state" value={draft.state} set={(v) => setDraft({ ...draft, state: v })} any="any" options={WORKFLOW_RUN_STATES} />
        <button type="submit" class="btn">
          Apply
        </button>
      </form>
      {!unavailable(runs.error) && <ErrorBox error={runs.error} />}
      {!runs.data && !runs.error && <Loading what="runs" />}
      {runs.data && (
        <Table
          rows={runs.data.runs}
          rowKey={(r) => r.id}
          empty="No runs match."
          cols={[
            { label: 'run', cell: (r) => <Id id={r.id} page="workflow-runs" data-run={r.id} /> },
            { label: 'workflow', cell: (r) => names.get(r.workflow_id) ?? <Id id={r.workflow_id} /> },
            { label: 'version', class: 'num', cell: (r) => r.version },
            { label: 'state', cell: (r) => <Badge state={r.state} /> },
            { label: 'key', cell: (r) => (r.concurrency_key !== undefined ? <span class="key">{r.concurrency_key}</span> : <span class="muted">—</span>) },
            { label: 'started', cell: (r) => <Time iso={r.created_at} /> },
            { label: 'finished', cell: (r) => <Time iso={r.finished_at} /> },
          ]}
        />
      )}
      <PagerBar pager={pager} nextCursor={runs.data?.next_cursor} />
    </Section>
  );
}

/** Defaults included: they are valid input and keep the next version equal unless edited. */
function editable(v: WorkflowVersion): { steps: WorkflowVersion['steps'] } {
  return { steps: v.steps };
}

export function WorkflowDetail({ id, query, session }: { id: string; query: URLSearchParams; session: SessionInfo }) {
  const wf = useGet<{ workflow: Workflow }>(`/v1/workflows/${enc(id)}`);
  const versions = useGet<{ versions: WorkflowVersion[] }>(`/v1/workflows/${enc(id)}/versions`);
  const w = wf.data?.workflow;
  if (unavailable(wf.error) && !w) return <Section title="Workflow">{UNAVAILABLE}</Section>;
  if (wf.error && !w) return <ErrorBox error={wf.error} />;
  if (!w) return <Loading what="workflow" />;
  const all = versions.data?.versions ?? [];
  const current = all.find((v) => v.number === w.current_version);
  // While a refresh catches up after a publish the list lags the workflow: the editor stays
  // mounted across that moment, so its text and the publish's status are not lost.
  const newest = current ?? all.reduce<WorkflowVersion | undefined>((a, v) => (!a || v.number > a.number ? v : a), undefined);
  return (
    <>
      <Section title={`Workflow ${w.name}`} actions={<Badge state={lifecycle(w)} />}>
        <Fields
          items={[
            ['id', <code>{w.id}</code>],
            ['revision', w.revision],
            ['current version', String(w.current_version)],
            ['created', <Time iso={w.created_at} />],
            ['updated', <Time iso={w.updated_at} />],
            ['retired', w.retired_at ? <Time iso={w.retired_at} /> : null],
          ]}
        />
        {current && <WorkflowGraph steps={current.steps} label={`version ${current.number} of ${w.name}`} />}
      </Section>
      <StartRun workflow={w} versions={all} session={session} />
      {newest && (
        <PublishVersion
          path={`/v1/workflows/${enc(w.id)}/versions`}
          definition={w}
          initial={editable(newest)}
          why={lacking(session, 'workflows:manage') ?? (w.retired_at ? 'the workflow is retired' : undefined)}
          preview={preview}
        />
      )}
      <VersionHistory versions={all} current={w.current_version} error={versions.error} summary={(v) => `${v.steps.length} steps — `} body={editable} />
      <RunList query={query} workflows={[w]} fixed={w.id} />
    </>
  );
}

function StartRun({ workflow: w, versions, session }: { workflow: Workflow; versions: WorkflowVersion[]; session: SessionInfo }) {
  const input = useJsonDraft('{}');
  const [key, setKey] = useState('');
  const [version, setVersion] = useState('');
  const start = useAction<StartWorkflowRunBody, WorkflowRunReceipt>(`/v1/workflows/${enc(w.id)}/runs`);
  const body: StartWorkflowRunBody = {
    input: input.value ?? null,
    ...(version ? { version: Number(version) } : {}),
    ...(key.trim() ? { concurrency_key: key.trim() } : {}),
  };
  const started = start.result?.run.id;
  useEffect(() => {
    if (started) location.hash = href('workflow-runs', started);
  }, [started]);
  const why = lacking(session, 'workflows:run') ?? (w.retired_at ? 'the workflow is retired' : undefined);
  return (
    <Section title="Start a run">
      <div class="start-run">
        <JsonField name="run_input" label="Input (JSON)" draft={input} error={start.error} prefix="input" rows={4} />
        <div class="row">
          <TextField label="Concurrency key (optional)" name="run_concurrency_key" maxLength={256} value={key} set={setKey} />
          <Select
            label="Version"
            name="run_version"
            value={version}
            set={setVersion}
            any={`current (${w.current_version})`}
            options={versions.map((v) => String(v.number))}
          />
        </div>
        <div class="row">
          <Button why={why} disabled={start.busy || !!input.problem} onClick={() => void start.run(body)} data-act="start-run">
            Start run
          </Button>
          {started && (
            <a href={href('workflow-runs', started)} data-started-run={started}>
              run {started.slice(0, 8)}…
            </a>
          )}
        </div>
        <ActionStatus action={start} body={body} what="Start" />
      </div>
    </Section>
  );
}

/** The graph of the version being edited, with the steps a refusal names flagged. */
function preview(value: unknown, error: ApiError | undefined) {
  const steps = (value as { steps?: unknown } | undefined)?.steps;
  const drawn = Array.isArray(steps) ? steps.filter((s): s is { key: string; after?: string[] } => typeof s?.key === 'string') : [];
  const flagged = error?.details?.steps;
  return drawn.length > 0 ? (
    <WorkflowGraph steps={drawn} flagged={Array.isArray(flagged) ? (flagged as string[]) : []} label="preview of the edited version" />
  ) : (
    <p class="muted">No steps to draw.</p>
  );
}
