// The console shell: sign-in, navigation, auto-refresh, and the page of the current route.
import { render, type JSX } from 'preact';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError, clearToken, getToken, onUnauthenticated, setToken } from './api.js';
import { RefreshTick, toApiError } from './hooks.js';
import { AccessPage } from './pages/access.js';
import { Overview } from './pages/overview.js';
import { QueuePage } from './pages/queue.js';
import { ResourceKeyPage } from './pages/resource-key.js';
import { ScheduleDetail, ScheduleList } from './pages/schedules.js';
import { SubscriptionDetail, SubscriptionList } from './pages/subscriptions.js';
import { TaskPage } from './pages/task.js';
import { TasksPage } from './pages/tasks.js';
import { WorkersPage } from './pages/workers.js';
import { WorkflowRunPage } from './pages/workflow-run.js';
import { WorkflowDetail, WorkflowList } from './pages/workflows.js';
import { href, useRoute, type Route } from './router.js';
import { loadSession, type SessionInfo } from './session.js';
import { ErrorBox, Loading, TextField } from './ui.js';

const NAV: [string, string][] = [
  ['overview', 'Overview'],
  ['tasks', 'Tasks'],
  ['key', 'Resource key'],
  ['workers', 'Workers'],
  ['subscriptions', 'Subscriptions'],
  ['schedules', 'Schedules'],
  ['workflows', 'Workflows'],
  ['access', 'Application access'],
];
const REFRESH_PREF = 'orbit.console.autorefresh';

function SignIn({ onSignedIn, notice }: { onSignedIn: (s: SessionInfo) => void; notice: ApiError | undefined }) {
  const [token, setDraft] = useState('');
  const [error, setError] = useState<ApiError | undefined>(notice);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const s = await loadSession(token.trim());
      setToken(token.trim());
      onSignedIn(s);
    } catch (err) {
      setError(toApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form class="card" onSubmit={(e) => void submit(e)}>
        <h1>Orbit console</h1>
        <p class="muted">Paste a credential token. It stays in this tab only (sessionStorage) and is sent to this gateway's /v1 API.</p>
        <TextField label="Token" name="token" type="password" autoComplete="off" required value={token} set={setDraft} />
        <button class="btn primary" type="submit" disabled={busy || token.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <ErrorBox error={error} title="Sign-in failed" />
      </form>
    </main>
  );
}

/** The page of each route; a page without its id shows its list. */
const PAGES: Record<string, (r: Route, session: SessionInfo) => JSX.Element> = {
  queues: (r, session) => (r.id ? <QueuePage id={r.id} session={session} /> : <Overview session={session} />),
  tasks: (r, session) => <TasksPage query={r.query} session={session} />,
  task: (r, session) => (r.id ? <TaskPage id={r.id} session={session} /> : <TasksPage query={r.query} session={session} />),
  key: (r) => <ResourceKeyPage id={r.id} />,
  workers: (r, session) => <WorkersPage session={session} queueId={r.query.get('queue_id') ?? undefined} />,
  subscriptions: (r, session) => (r.id ? <SubscriptionDetail id={r.id} session={session} /> : <SubscriptionList session={session} />),
  schedules: (r) => (r.id ? <ScheduleDetail id={r.id} /> : <ScheduleList />),
  workflows: (r, session) => (r.id ? <WorkflowDetail id={r.id} query={r.query} session={session} /> : <WorkflowList query={r.query} />),
  'workflow-runs': (r, session) => (r.id ? <WorkflowRunPage id={r.id} session={session} /> : <WorkflowList query={r.query} />),
  access: (_r, session) => <AccessPage session={session} />,
  overview: (_r, session) => <Overview session={session} />,
};

function App() {
  const route = useRoute();
  const [session, setSession] = useState<SessionInfo | null>(null);
  const [restoring, setRestoring] = useState(() => getToken() !== null);
  const [notice, setNotice] = useState<ApiError | undefined>();
  const [auto, setAuto] = useState(() => localStorage.getItem(REFRESH_PREF) !== 'off');
  const [tick, setTick] = useState(0);
  const bump = useCallback(() => setTick((t) => t + 1), []);
  const refresh = useMemo(() => ({ tick, bump }), [tick, bump]);

  const signOut = useCallback((why?: ApiError) => {
    clearToken();
    setSession(null);
    setNotice(why);
  }, []);
  useEffect(
    () => onUnauthenticated(() => signOut(new ApiError(401, 'UNAUTHENTICATED', 'the credential was rejected (unknown or revoked); sign in again', null))),
    [signOut],
  );
  useEffect(() => {
    const token = getToken();
    if (!token) return;
    loadSession(token)
      .then(setSession, (e) => signOut(toApiError(e)))
      .finally(() => setRestoring(false));
  }, []);
  useEffect(() => {
    localStorage.setItem(REFRESH_PREF, auto ? 'on' : 'off');
    if (!auto || !session) return;
    const t = setInterval(bump, 2000);
    return () => clearInterval(t);
  }, [auto, session, bump]);

  if (restoring && !session) return <Loading what="session" />;
  if (!session) return <SignIn onSignedIn={(s) => (setNotice(undefined), setSession(s))} notice={notice} />;
  return (
    <RefreshTick.Provider value={refresh}>
      <header class="top">
        <a class="brand" href={href('overview')}>
          Orbit
        </a>
        <nav>
          {NAV.map(([page, label]) => (
            <a
              key={page}
              href={href(page)}
              class={
                route.page === page || (page === 'overview' && route.page === 'queues') || (page === 'workflows' && route.page === 'workflow-runs') ? 'on' : ''
              }
            >
              {label}
            </a>
          ))}
        </nav>
        <div class="tools">
          <label class="toggle" title="reload every 2 s">
            <input type="checkbox" name="autorefresh" checked={auto} onChange={(e) => setAuto(e.currentTarget.checked)} /> auto-refresh
          </label>
          <button type="button" class="btn small" onClick={bump}>
            Refresh
          </button>
          <button type="button" class="btn small" onClick={() => signOut()} data-act="sign-out">
            Sign out
          </button>
        </div>
      </header>
      <main class="page" key={location.hash}>
        {PAGES[Object.hasOwn(PAGES, route.page) ? route.page : 'overview']!(route, session)}
      </main>
    </RefreshTick.Provider>
  );
}

render(<App />, document.getElementById('app')!);
