/** Where the metadata document is served (AuthZEN §9, RFC 8615): the base URL's path follows the well-known name. */
export const WELL_KNOWN = '/.well-known/authzen-configuration';

/** The path of the metadata document for PDP identifier `base` (`https://host[:port][/path]`). */
export function metadataPath(base: string): string {
  return WELL_KNOWN + new URL(base).pathname.replace(/^\/$/, '');
}

/**
 * The metadata document (docs/authzen.md), built from the configured identifier only, never
 * from the request's Host: no capabilities and no signed metadata, as none applies.
 */
export function metadataDocument(base: string): string {
  return JSON.stringify({
    policy_decision_point: base,
    access_evaluation_endpoint: `${base}/access/v1/evaluation`,
    access_evaluations_endpoint: `${base}/access/v1/evaluations`,
    search_subject_endpoint: `${base}/access/v1/search/subject`,
    search_resource_endpoint: `${base}/access/v1/search/resource`,
    search_action_endpoint: `${base}/access/v1/search/action`,
  });
}
