// @ts-check
// ESLint (flat config): typescript-eslint's recommended rules plus the layer rules of
// docs/design.md ("Layers"). `npm run lint` runs it with `prettier --check .`; `npm test`'s pretest
// runs `npm run lint`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// ---- Layers --------------------------------------------------------------------------------
// edges → domain → store → protocol. A layer imports the ones below it (and its own), never
// one above. Names are directories or top-level modules of server/.
const EDGES = ['http', 'gateway', 'cli', 'console', 'api-docs'];
const DOMAIN = ['dispatch', 'events', 'schedules', 'workflows', 'admin'];
// Top-level server/*.ts modules (shared infrastructure), in two groups:
//  LEAF: import nothing from server/ (only packages and protocol/): every layer, the store
//  included, may use them.
const LEAF = ['ids', 'paths', 'logger'];
//  SHARED: read the store or name domain types (config checks the DSN with db/pool's parser,
//  metrics reads db/pipeline's counters and task and workflow gauges, app-context and
//  work-signals name dispatch's types): the domain and the edges may use them, the store may not.
const SHARED = ['config', 'metrics', 'boundary', 'app-context', 'work-signals'];
// The composition root of a gateway process: built from every layer, used only by the CLIs.
const ROOT = ['gateway-main'];
// What the server must never import: the SDK is a client of the server, the rest are not shipped.
const OUTSIDE = ['worker-sdk', 'test', 'bench', 'examples'];

const DOC = 'see docs/design.md "Layers"';
const alt = (names) => names.join('|');
/** A relative import of one of `names` (a server/ directory `name/…` or module `name.js`) from a
 * file `depth` directories below server/ (0: server/*.ts). Deeper files climb more `../`. */
const toServer = (names, depth) => (depth === 0 ? `^\\./(${alt(names)})(/|\\.js$)` : `^(\\.\\./){${depth},}(${alt(names)})(/|\\.js$)`);

/** One config block: the files of a layer and the imports refused to them. */
function layer(name, files, refused, extra = []) {
  return {
    name: `orbit/layers/${name}`,
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [],
          patterns: [
            ...refused.map(([names, depth, why]) => ({ regex: toServer(names, depth), message: `${why} (${DOC})`, caseSensitive: true })),
            { regex: '^@orbit/worker-sdk(/|$)', message: `the server does not import the worker SDK (${DOC})` },
            { regex: `^(\\.\\./)+(${alt(OUTSIDE)})/`, message: `the server does not import the SDK, tests, benchmarks or examples (${DOC})` },
            ...extra,
          ],
        },
      ],
    },
  };
}

const inDir = (dirs) => dirs.map((d) => `server/${d}/**/*.{ts,tsx}`);
const topLevel = (mods) => mods.map((m) => `server/${m}.ts`);

const layerBlocks = [
  layer('store', inDir(['db']), [
    [[...EDGES, ...DOMAIN, ...SHARED, ...ROOT], 1, 'server/db (the store) imports only protocol and the leaf modules ids, paths, logger'],
    [['mariadb'], 1, 'server/db (the store) does not import server/mariadb (the database server), which builds on it'],
  ]),
  // The database server (launcher, installer, migrations, named locks, Galera node registry): part
  // of the store layer, on top of server/db's pool and error numbers.
  layer('database-server', inDir(['mariadb']), [
    [[...EDGES, ...DOMAIN, ...SHARED, ...ROOT], 1, 'server/mariadb imports only server/db, protocol and the leaf modules ids, paths, logger'],
  ]),
  layer('dispatch', inDir(['dispatch']), [
    [[...EDGES, ...ROOT], 1, 'the domain does not import the edges'],
    [['events', 'schedules', 'workflows', 'admin'], 1, 'dispatch is the core the other domain modules build on: it does not import them'],
  ]),
  layer('domain', inDir(['events', 'schedules', 'workflows', 'admin']), [[[...EDGES, ...ROOT], 1, 'the domain does not import the edges']]),
  // The edges may use each other's plumbing (the WebSocket upgrade is an HTTP request; the HTTP
  // server serves the console and the API documents), but only the CLIs start a process.
  layer('edges', inDir(['http', 'gateway', 'api-docs']), [[['cli', ...ROOT], 1, 'only the CLIs start a process']]),
  layer('console-server', ['server/console/*.ts'], [[['cli', ...ROOT], 1, 'only the CLIs start a process']]),
  layer('cli', inDir(['cli']), []),
  // The console's browser bundle: protocol/ (relative, bundled by esbuild) and preact only.
  layer(
    'console-app',
    ['server/console/app/**/*.{ts,tsx}'],
    [[[...EDGES, ...DOMAIN, 'db', 'mariadb', ...LEAF, ...SHARED, ...ROOT], 2, 'the console runs in the browser: it imports protocol/ and its own files only']],
  ),
  layer('leaf', topLevel(LEAF), [], [{ regex: '^\\.', message: `ids, paths and logger import nothing from server/ (${DOC})` }]),
  layer('shared', topLevel(SHARED), [
    [
      [...EDGES, ...ROOT, 'events', 'schedules', 'workflows', 'admin'],
      0,
      'shared infrastructure does not import the edges or the domain beyond dispatch types',
    ],
  ]),
  layer('root', topLevel(ROOT), [[['cli'], 0, 'only the CLIs start a process']]),
  {
    name: 'orbit/layers/protocol',
    files: ['protocol/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^\\.\\./', message: `protocol/ is the bottom layer: it imports packages and its own files only (${DOC})` },
            { regex: '^@orbit/', message: `protocol/ is the bottom layer: it imports packages and its own files only (${DOC})` },
          ],
        },
      ],
    },
  },
  {
    name: 'orbit/layers/worker-sdk',
    files: ['worker-sdk/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^\\.\\./', message: `the worker SDK imports @orbit/protocol, packages and its own files only (${DOC})` },
            { regex: '^@orbit/(?!protocol(/|$))', message: `the worker SDK imports @orbit/protocol, packages and its own files only (${DOC})` },
          ],
        },
      ],
    },
  },
];

export default tseslint.config(
  { name: 'orbit/ignores', ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**', '.orbit/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    name: 'orbit/typescript',
    files: ['**/*.{ts,tsx}'],
    languageOptions: {
      // Type information for the type-aware rules below, from the TypeScript projects (each file
      // from the one that includes it). Imports across projects read the referenced project's
      // declarations, so the lint expects a build (`npm run build`), as the tests do.
      parserOptions: {
        project: ['./tsconfig.json', './tsconfig.test.json', './protocol/tsconfig.json', './worker-sdk/tsconfig.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Type-aware, chosen for cost and yield: a promise nobody awaits or catches, or one handed
      // where a void callback is expected, loses its rejection; awaiting a non-promise is a slip.
      // (The no-unsafe-* family would flag every JSON body the tests read; not worth it.)
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-for-in-array': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/prefer-promise-reject-errors': 'error',
      // `_`-prefixed names are deliberately unused (a callback's leading parameters, a rest sibling).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
    },
  },
  {
    // Test and benchmark harnesses read JSON bodies, frames and child-process messages as `any` to
    // assert on them; the shipped code (server/, protocol/, worker-sdk/, examples/) may not.
    name: 'orbit/harnesses',
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Config files outside every tsconfig: no type information.
    name: 'orbit/config-files',
    files: ['*.js', 'vitest.config.ts'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The layer rules read import declarations; a dynamic import() would pass unchecked.
    name: 'orbit/layers/static-imports',
    files: ['server/**/*.{ts,tsx}', 'protocol/**/*.ts', 'worker-sdk/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'ImportExpression', message: `static imports only: the layer rules do not see a dynamic import() (${DOC})` },
      ],
    },
  },
  ...layerBlocks,
);
