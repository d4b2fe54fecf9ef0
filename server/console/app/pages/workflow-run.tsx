// A workflow run, drawn as the graph of its pinned version.
import { useState } from 'preact/hooks';
import type { CancelWorkflowRunBody, SendSignalBody } from '../../../../protocol/workflow-schemas.js';
import type { Workflow, WorkflowRun, WorkflowRunStep, WorkflowStep, WorkflowVersion } from '../../../../protocol/workflow-views.js';
import { ActionStatus } from '../actions.js';
import { enc, get } from '../api.js';
import { useAction, useResource } from '../hooks.js';
import { href } from '../router.js';
import { lacking, type SessionInfo } from '../session.js';
import { Badge, Button, ErrorBox, Fields, Id, Json, Loading, onSubmit, Section, Select, Table, TextField, Time } from '../ui.js';
import { JsonField, useJsonDraft } from './json-editor.js';
import { WorkflowGraph } from './workflow-graph.js';

const FINAL_RUN_STATES = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

/** The run, and the pinned version its graph's edges come from; either of those two may be unreadable. */
async function loadRun(id: string): Promise<{ run: WorkflowRun; workflow: Workflow | null; version: WorkflowVersion | null }> {
  const { run } = await get<{ run: WorkflowRun }>(`/v1/workflow-runs/${enc(id)}`);
  const none = () => null;
  const [workflow, version] = await Promise.all([
    get<{ workflow: Workflow }>(`/v1/workflows/${enc(run.workflow_id)}`).then((w) => w.workflow, none),
    get<{ version: WorkflowVersion }>(`/v1/workflows/${enc(run.workflow_id)}/versions/${run.version}`).then((v) => v.version, none),
  ]);
  return { run, workflow, version };
}

/** Task links of a step; a large fan-out shows its first ones and the count. */
const SHOWN_TASKS = 24;

function TaskLinks({ ids }: { ids: string[] }) {
  if (ids.length === 0) return <span class="muted">—</span>;
  return (
    <span class="task-links">
      {ids.slice(0, SHOWN_TASKS).map((id) => (
        <Id key={id} id={id} page="task" data-task={id} />
      ))}
      {ids.length > SHOWN_TASKS && <span class="muted">and {ids.length - SHOWN_TASKS} more</span>}
    </span>
  );
}

function stepNote(s: WorkflowRunStep): string | null {
  if (s.error) return `${s.error.code}: ${s.error.message}`;
  if (s.skipped_because) return `skipped: ${s.skipped_because}`;
  return null;
}

export function WorkflowRunPage({ id, session }: { id: string; session: SessionInfo }) {
  const res = useResource(() => loadRun(id), [id]);
  const [selected, setSelected] = useState<string | undefined>();
  if (res.error && !res.data) return <ErrorBox error={res.error} />;
  if (!res.data) return <Loading what="run" />;
  const { run, workflow, version } = res.data;
  const steps = new Map(run.steps.map((s) => [s.key, s]));
  const final = FINAL_RUN_STATES.includes(run.state);
  const why = lacking(session, 'workflows:run') ?? (final ? `the run is ${run.state}` : undefined);
  const pick = selected && steps.has(selected) ? selected : undefined;
  return (
    <>
      <Section title={`Workflow run ${run.id.slice(0, 8)}…`} actions={<Badge state={run.state} />}>
        <Fields
          items={[
            ['id', <code>{run.id}</code>],
            ['workflow', <a href={href('workflows', run.workflow_id)}>{workflow?.name ?? run.workflow_id}</a>],
            ['version', String(run.version)],
            ['concurrency key', run.concurrency_key !== undefined ? <span class="key">{run.concurrency_key}</span> : null],
            ['started', <Time iso={run.created_at} />],
            ['updated', <Time iso={run.updated_at} />],
            ['finished', run.finished_at ? <Time iso={run.finished_at} /> : null],
          ]}
        />
        <ErrorBox error={res.error} title="Refresh failed" />
        <RunCommands run={run} why={why} />
      </Section>
      <Section title="Graph">
        {version ? (
          <WorkflowGraph steps={version.steps} run={steps} selected={pick} onSelect={setSelected} label={`steps of run ${run.id}`} />
        ) : (
          <p class="muted">The version of this run could not be read.</p>
        )}
        {pick && <StepDetail step={steps.get(pick)!} spec={version?.steps.find((s) => s.key === pick)} />}
        {!pick && <p class="muted">Select a step to see its tasks, output and error.</p>}
      </Section>
      <Section title="Steps">
        <Table
          rows={run.steps}
          rowKey={(s) => s.key}
          cols={[
            {
              label: 'step',
              cell: (s) => (
                <button type="button" class="link" onClick={() => setSelected(s.key)} data-select-step={s.key}>
                  {s.key}
                </button>
              ),
            },
            { label: 'state', cell: (s) => <Badge state={s.state} /> },
            { label: 'tasks', cell: (s) => <TaskLinks ids={s.task_ids} /> },
            { label: 'started', cell: (s) => <Time iso={s.started_at} /> },
            { label: 'finished', cell: (s) => <Time iso={s.finished_at} /> },
            { label: 'note', cell: (s) => stepNote(s) ?? <span class="muted">—</span> },
          ]}
        />
      </Section>
      <Signals run={run} version={version} why={why} />
      <Section title="Input">
        <Json value={run.input} />
      </Section>
    </>
  );
}

function StepDetail({ step, spec }: { step: WorkflowRunStep; spec: WorkflowStep | undefined }) {
  return (
    <div class="step-detail" data-step-detail={step.key}>
      <h3>
        {step.key} <Badge state={step.state} />
      </h3>
      <Fields
        items={[
          ['kind', spec?.signal ? `signal ${spec.signal.name}` : spec?.for_each ? `task for each element of ${spec.for_each}` : 'task'],
          ['runs if', spec?.run_if ?? (spec && spec.after.length === 0 ? 'root' : 'all_succeeded')],
          ['tasks', <TaskLinks ids={step.task_ids} />],
          ['started', <Time iso={step.started_at} />],
          ['finished', <Time iso={step.finished_at} />],
          ['skipped because', step.skipped_because ?? null],
        ]}
      />
      {step.error && (
        <p class="field-error" data-step-error>
          <code>{step.error.code}</code>: {step.error.message}
        </p>
      )}
      {step.output !== undefined && (
        <>
          <span class="muted">output</span>
          <Json value={step.output} />
        </>
      )}
    </div>
  );
}

function RunCommands({ run, why }: { run: WorkflowRun; why: string | undefined }) {
  const base = `/v1/workflow-runs/${enc(run.id)}`;
  const pause = useAction<Record<string, never>>(`${base}:pause`);
  const resume = useAction<Record<string, never>>(`${base}:resume`);
  const cancel = useAction<CancelWorkflowRunBody>(`${base}:cancel`);
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const cancelBody: CancelWorkflowRunBody = reason.trim() ? { reason: reason.trim() } : {};
  return (
    <div class="actions">
      <div class="row">
        {run.state === 'PAUSED' ? (
          <Button why={why} disabled={resume.busy} onClick={() => void resume.run({})} data-act="resume-run">
            Resume
          </Button>
        ) : (
          <Button why={why} disabled={pause.busy} onClick={() => void pause.run({})} data-act="pause-run">
            Pause
          </Button>
        )}
        <Button why={why} class="btn danger" onClick={() => setOpen(!open)} data-act="cancel-run-open">
          Cancel run…
        </Button>
      </div>
      <ActionStatus action={pause} body={{}} what="Pause" />
      <ActionStatus action={resume} body={{}} what="Resume" />
      {open && !why && (
        <form class="retire" onSubmit={onSubmit(() => void cancel.run(cancelBody))}>
          <p>Cancelling ends the run: its waiting and leased tasks are cancelled, running ones finish and are recorded, nothing starts after them.</p>
          <TextField label="Reason" name="run_reason" maxLength={512} value={reason} set={setReason} />
          <button type="submit" class="btn danger" disabled={cancel.busy} data-act="cancel-run">
            Cancel run
          </button>
        </form>
      )}
      <ActionStatus action={cancel} body={cancelBody} what="Cancel" />
    </div>
  );
}

/** A consumed signal's payload is its step's output. */
function Signals({ run, version, why }: { run: WorkflowRun; version: WorkflowVersion | null; why: string | undefined }) {
  const waits = (version?.steps ?? []).filter((s) => s.signal);
  const [name, setName] = useState('');
  const payload = useJsonDraft('null');
  const send = useAction<SendSignalBody>(`/v1/workflow-runs/${enc(run.id)}/signals`);
  const chosen = name || waits[0]?.signal?.name || '';
  const body: SendSignalBody = { name: chosen, payload: payload.value ?? null };
  const steps = new Map(run.steps.map((s) => [s.key, s]));
  if (waits.length === 0) return null;
  return (
    <Section title="Signals">
      <Table
        rows={waits}
        rowKey={(s) => s.key}
        cols={[
          { label: 'name', cell: (s) => <code>{s.signal!.name}</code> },
          { label: 'step', cell: (s) => s.key },
          { label: 'state', cell: (s) => <Badge state={steps.get(s.key)?.state ?? 'PENDING'} /> },
          { label: 'timeout', class: 'num', cell: (s) => `${s.signal!.timeout_seconds} s` },
          {
            label: 'payload',
            cell: (s) => {
              const st = steps.get(s.key);
              return st?.state === 'SUCCEEDED' ? (
                <code data-signal-payload={s.signal!.name}>{JSON.stringify(st.output ?? null)}</code>
              ) : (
                <span class="muted">—</span>
              );
            },
          },
        ]}
      />
      <p class="muted">A signal sent before its step is reached is kept and consumed when the step starts; each name can be sent once.</p>
      <div class="signal-form">
        <Select label="Name" name="signal_name" value={chosen} set={setName} options={waits.map((s) => s.signal!.name)} />
        <JsonField name="signal_payload" label="Payload (JSON)" draft={payload} error={send.error} prefix="payload" rows={3} />
        <div class="row">
          <Button why={why} disabled={send.busy || !!payload.problem || !chosen} onClick={() => void send.run(body)} data-act="signal">
            Send signal
          </Button>
        </div>
        <ActionStatus action={send} body={body} what="Signal" />
      </div>
    </Section>
  );
}
