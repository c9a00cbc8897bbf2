import type { EngineResponse } from './port.ts';

/**
 * The peer's IP address as text, one spelling whatever the engine (docs/api.md §11:
 * forwarding headers are not trusted): dotted IPv4, also for a client that reached an IPv6 socket
 * (`::ffff:127.0.0.1`), else compressed IPv6 as RFC 5952 has it (`::1`). uWS writes IPv6 out in
 * full (`0000:0000:0000:0000:0000:ffff:7f00:0001`), node:http compressed. Call it during the
 * handler's synchronous part.
 */
export function peerAddress(res: EngineResponse): string {
  return canonicalAddress(Buffer.from(res.getRemoteAddressAsText()).toString('latin1'));
}

const MAPPED_IPV4 = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/** `text` (an IPv4 or IPv6 address, perhaps with a `%zone`) in the form {@link peerAddress} gives. */
export function canonicalAddress(text: string): string {
  if (!text.includes(':')) return text;
  const percent = text.indexOf('%');
  const zone = percent < 0 ? '' : text.slice(percent);
  let host: string;
  try {
    // The WHATWG URL parser writes IPv6 hosts in RFC 5952's compressed form.
    host = new URL(`http://[${percent < 0 ? text : text.slice(0, percent)}]/`).hostname.slice(1, -1);
  } catch {
    return text;
  }
  const mapped = MAPPED_IPV4.exec(host);
  if (mapped === null) return host + zone;
  const [hi, lo] = [parseInt(mapped[1] as string, 16), parseInt(mapped[2] as string, 16)];
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}
