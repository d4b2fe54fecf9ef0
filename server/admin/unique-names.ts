// Named resources are unique by name in their namespace forever, a retired one's included: the
// unique key decides, and its duplicate becomes the documented 409 instead of a database error.
import { OrbitError } from '@orbit/protocol/errors';
import { isDuplicateKey } from '../db/errors.js';

export async function insertNamed(kind: 'queue' | 'subscription' | 'schedule' | 'workflow', name: string, insert: () => Promise<unknown>): Promise<void> {
  try {
    await insert();
  } catch (err) {
    if (isDuplicateKey(err)) throw new OrbitError('STATE_CONFLICT', `a ${kind} named ${name} exists or existed in this namespace`, { field: 'name' });
    throw err;
  }
}
