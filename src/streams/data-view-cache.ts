/**
 * A DataView over the last byte array asked for, made again only when the
 * array changes: the decoders read many small values from one payload (and
 * write into one output), and a DataView per call cost more than the reads
 * it served.
 */
export class DataViewCache {
  private bytes: Uint8Array | null = null;
  private view: DataView = new DataView(new ArrayBuffer(8));

  over(bytes: Uint8Array): DataView {
    if (bytes !== this.bytes) {
      this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      this.bytes = bytes;
    }
    return this.view;
  }
}
