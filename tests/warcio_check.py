"""Reads WARC files with warcio, the reference Python reader, for crawltop's WARC writer test.

Usage: warcio_check.py FILE...
Prints one tab-separated line per record:
  file offset type record-id target-uri status payload-length payload-sha1-base32
Digests are verified by warcio itself (check_digests='raise'); any problem exits non-zero.
Exits 3 when warcio is not installed, so the caller can skip.
"""
import base64
import hashlib
import sys

try:
    from warcio.archiveiterator import ArchiveIterator
except ImportError:
    sys.exit(3)


def main(paths):
    for path in paths:
        with open(path, "rb") as f:
            records = ArchiveIterator(f, check_digests="raise")
            for record in records:
                payload = record.raw_stream.read()
                status = record.http_headers.get_statuscode() if record.http_headers else "-"
                if record.digest_checker.passed is False:
                    raise SystemExit(f"digest problem: {record.digest_checker.problems}")
                digest = base64.b32encode(hashlib.sha1(payload).digest()).decode()
                print("\t".join([
                    path,
                    str(records.get_record_offset()),
                    record.rec_type,
                    record.rec_headers.get_header("WARC-Record-ID"),
                    record.rec_headers.get_header("WARC-Target-URI") or "-",
                    str(status),
                    str(len(payload)),
                    digest,
                ]))


if __name__ == "__main__":
    main(sys.argv[1:])
