import { sequenceNumberOf } from '../../../../lib/adapters/aws/stream-record';
import { readOrderChange } from '../../../../examples/reference/domain/order-stream';
import { streamRecord } from '../../../helpers/dynamodb-stream';

describe('Function: readOrderChange', () => {
  it('when a MODIFY record of an order arrives, it returns both images as plain objects', () => {
    // Prepare
    const record = streamRecord({
      eventName: 'MODIFY',
      keys: { orderId: 'o-1' },
      oldImage: { orderId: 'o-1', version: 1, lines: [{ sku: 'a', quantity: 2 }] },
      newImage: { orderId: 'o-1', version: 2, lines: [{ sku: 'a', quantity: 2 }] },
      sequenceNumber: '42',
    });

    // Act
    const change = readOrderChange(record);

    // Assess
    expect(change).toEqual({
      kind: 'order',
      eventName: 'MODIFY',
      orderId: 'o-1',
      oldImage: { orderId: 'o-1', version: 1, lines: [{ sku: 'a', quantity: 2 }] },
      newImage: { orderId: 'o-1', version: 2, lines: [{ sku: 'a', quantity: 2 }] },
    });
    expect(sequenceNumberOf(record)).toBe('42');
  });

  it('when the keys are not an order key, it is unknown and says which keys it saw', () => {
    // Act
    const change = readOrderChange(
      streamRecord({ eventName: 'INSERT', keys: { sku: 's' }, newImage: { sku: 's' }, sequenceNumber: '1' }),
    );

    // Assess
    expect(change).toEqual({ kind: 'unknown', reason: 'no orderId key (keys: sku)' });
  });

  it('when a MODIFY lacks its old image (a KEYS_ONLY or NEW_IMAGE stream), it is unknown', () => {
    // Act
    const change = readOrderChange(
      streamRecord({
        eventName: 'MODIFY',
        keys: { orderId: 'o-1' },
        newImage: { orderId: 'o-1' },
        sequenceNumber: '1',
      }),
    );

    // Assess
    expect(change.kind).toBe('unknown');
  });
});
