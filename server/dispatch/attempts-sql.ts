// Moved to server/db/attempts.ts. These re-exports serve server/http/routes-attempts.ts only, which
// another change is rewriting at the same time; once it imports from ../db/attempts.js this file
// goes.
export { attemptView, getAttempt, listTaskAttempts } from '../db/attempts.js';
