import { randomBytes } from 'node:crypto';

/** 32 bytes: above the 24 the Standard Webhooks secret format asks for (docs/api.md §16). */
const SECRET_BYTES = 32;
/** 16 bytes: as unguessable as a UUID, without being shaped like one (see newWebhookId). */
const ID_BYTES = 16;

/**
 * A new schedule's signing secret: `whsec_` and the base64 of 32 random bytes. Deliveries are
 * signed with the decoded bytes; the text is shown to the client once, in the 201 of the schedule.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/**
 * A new `webhook-id` (`msg_` and 32 hex digits), chosen once per run and kept on every retry so
 * that a receiver can drop duplicates. Plain hex, never dashed: client keys are UUIDs, and the
 * output scan treats any UUID-shaped text in logs as a leaked key.
 */
export function newWebhookId(): string {
  return `msg_${randomBytes(ID_BYTES).toString('hex')}`;
}
