/**
 * A local stand-in for AWS that answers every request as AWS answers one signed with an expired
 * or unknown token, in each protocol's own error shape, so the SDK deserializes a real service
 * exception: query protocol (CloudFormation, CloudWatch, SNS; XML) ExpiredToken; SQS (JSON with
 * the x-amzn-query-error code) InvalidClientTokenId; the other JSON protocols (DynamoDB, SSM)
 * ExpiredTokenException; REST JSON (Lambda) UnrecognizedClientException.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** AWS's message for an expired session token. */
export const EXPIRED_TOKEN_MESSAGE = 'The security token included in the request is expired';
/** AWS's message for an access key it does not know. */
export const INVALID_TOKEN_MESSAGE = 'The security token included in the request is invalid.';

/** A running stand-in. */
export interface TokenErrorServer {
  readonly endpoint: string;
  close(): Promise<void>;
}

function answer(req: http.IncomingMessage, res: http.ServerResponse): void {
  const target = String(req.headers['x-amz-target'] ?? '');
  if (String(req.headers['content-type']).includes('x-www-form-urlencoded')) {
    res.writeHead(403, { 'content-type': 'text/xml' });
    res.end(
      `<ErrorResponse><Error><Type>Sender</Type><Code>ExpiredToken</Code><Message>${EXPIRED_TOKEN_MESSAGE}</Message></Error><RequestId>r1</RequestId></ErrorResponse>`,
    );
  } else if (target.startsWith('AmazonSQS.')) {
    res.writeHead(403, {
      'content-type': 'application/x-amz-json-1.0',
      'x-amzn-query-error': 'InvalidClientTokenId;Sender',
    });
    res.end(
      JSON.stringify({
        __type: 'com.amazon.coral.service#InvalidClientTokenId',
        message: INVALID_TOKEN_MESSAGE,
      }),
    );
  } else if (target !== '') {
    res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
    res.end(
      JSON.stringify({
        __type: 'com.amazon.coral.service#ExpiredTokenException',
        message: EXPIRED_TOKEN_MESSAGE,
      }),
    );
  } else {
    res.writeHead(403, {
      'content-type': 'application/json',
      'x-amzn-errortype':
        'UnrecognizedClientException:http://internal.amazon.com/coral/com.amazon.coral.service/',
    });
    res.end(JSON.stringify({ message: INVALID_TOKEN_MESSAGE }));
  }
}

/** Starts the stand-in on 127.0.0.1 (a free port). */
export async function startTokenErrorServer(): Promise<TokenErrorServer> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
