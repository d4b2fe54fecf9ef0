// Named resources (queues, subscriptions, schedules, workflows) are unique by name in their
// namespace forever, a retired one's name included: the unique key decides, and its duplicate
// becomes the documented 409 instead of a raw database error.
import { OrbitError } from '@orbit/protocol/errors';
import { isDuplicateKey } from '../db/errors.js';

/** Runs the INSERT of a named resource (queue, subscription, schedule, workflow): a duplicate key
 * becomes 409 STATE_CONFLICT on `name`. */
export async function insertNamed(kind: 'queue' | 'subscription' | 'schedule' | 'workflow', name: string, insert: () => Promise<unknown>): Promise<void> {
  try {
    await insert();
  } catch (err) {
    if (isDuplicateKey(err)) throw new OrbitError('STATE_CONFLICT', `a ${kind} named ${name} exists or existed in this namespace`, { field: 'name' });
    throw err;
  }
}
