// A JSON text field for command bodies, showing the last refusal at the field it names.
import { useState } from 'preact/hooks';
import type { ApiError } from '../api.js';

export interface JsonDraft {
  text: string;
  set: (t: string) => void;
  /** The parsed value, or undefined when the text is not JSON (see `problem`). */
  value: unknown;
  problem: string | null;
}

export function useJsonDraft(initial: string): JsonDraft {
  const [text, set] = useState(initial);
  let value: unknown;
  let problem: string | null = null;
  try {
    value = JSON.parse(text);
  } catch (e) {
    problem = (e as Error).message;
  }
  return { text, set, value, problem };
}

/** `error` is the last refusal of the command this field feeds; its details.field is shown here
 * when it names this field (`prefix` or below it). */
export function JsonField(p: { name: string; label: string; draft: JsonDraft; rows?: number; error?: ApiError; prefix?: string; disabled?: boolean }) {
  const field = p.error?.details?.field;
  const here = typeof field === 'string' && p.prefix !== undefined && (field === p.prefix || field.startsWith(`${p.prefix}.`));
  const steps = p.error?.details?.steps;
  return (
    <label class="json-field">
      {p.label}
      <textarea
        name={p.name}
        class={`editor${p.draft.problem || here ? ' invalid' : ''}`}
        rows={p.rows ?? 4}
        spellcheck={false}
        disabled={p.disabled}
        value={p.draft.text}
        onInput={(e) => p.draft.set(e.currentTarget.value)}
      />
      {p.draft.problem && <span class="field-error">not valid JSON: {p.draft.problem}</span>}
      {here && (
        <span class="field-error" data-field-error>
          field <code>{field}</code>
          {Array.isArray(steps) && steps.length > 0 && (
            <>
              {' '}
              (steps <code>{steps.join(', ')}</code>)
            </>
          )}
          : {p.error!.message}
        </span>
      )}
    </label>
  );
}
