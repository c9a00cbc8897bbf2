import type * as Uws from 'uWebSockets.js';
import type { EngineResponse, WireText } from '../port.ts';

/**
 * The native response to a HEAD request. uWS writes whatever body it is given, HEAD or not; a
 * body after the head of an answer to HEAD is read by the client as the start of the next
 * response (Node.js's own client fails with HPE_INVALID_CONSTANT). Here every answer keeps its
 * headers and the Content-Length its body would have, and sends no body, as node:http does.
 * `endWithoutBody` is called without arguments: the 20.30 build aborts the process when given
 * a reported length or closeConnection. An answer that closes the connection (a refusal, or any
 * answer while draining) goes out as an empty body instead, so it says Content-Length: 0.
 */
export class HeadResponse implements EngineResponse {
  readonly #res: Uws.HttpResponse;

  constructor(res: Uws.HttpResponse) {
    this.#res = res;
  }

  writeStatus(status: WireText): this {
    this.#res.writeStatus(status);
    return this;
  }

  writeHeader(name: WireText, value: WireText): this {
    this.#res.writeHeader(name, value);
    return this;
  }

  end(body: string | Uint8Array, closeConnection?: boolean): this {
    if (closeConnection === true) {
      this.#res.end('', true);
      return this;
    }
    this.#res.writeHeader('Content-Length', String(Buffer.byteLength(body)));
    this.#res.endWithoutBody();
    return this;
  }

  endWithoutBody(): this {
    this.#res.endWithoutBody();
    return this;
  }

  cork(write: () => void): this {
    this.#res.cork(write);
    return this;
  }

  onAborted(handler: () => void): this {
    this.#res.onAborted(handler);
    return this;
  }

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    this.#res.onData(handler);
    return this;
  }

  getRemoteAddressAsText(): ArrayBuffer {
    return this.#res.getRemoteAddressAsText();
  }
}
