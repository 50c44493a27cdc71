"""The SQLite ledger: a file shared by every process that opens it with the same key."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

from dpcompose._validation import check_finite_nonnegative
from dpcompose.combinators._ledger.anchor import Anchor
from dpcompose.combinators._ledger.base import (
    Ledger,
    LedgerEntry,
    LedgerError,
    LedgerLocked,
    check_update,
    continues,
    mismatch,
)
from dpcompose.combinators._ledger.chain import (
    Corrupt,
    RolledBack,
    Unanchored,
    Unverifiable,
    as_blob,
    as_int,
    decode_entry,
    encode_entry,
    genesis,
    link,
)
from dpcompose.combinators._ledger.files import (
    SQL_ERRORS,
    committed,
    create_file,
    fsync_dir,
    is_locked,
    sqlite_primary,
)
from dpcompose.combinators._ledger.journal import (
    APPLICATION_ID,
    HEAD,
    JOURNAL,
    SCHEMA,
    SCHEMA_V3,
    SCHEMA_VERSION,
    VERSIONS_READ,
    append,
    build,
    fold,
    fold_due,
    fold_point,
    hash_at,
    upgrade,
    walk,
)
from dpcompose.errors import InvalidParameter

__all__ = ["SQLiteLedger"]

_MAX_TIMEOUT = 2_000_000.0  # seconds; sqlite's busy timeout is a 32-bit count of milliseconds


_LIVE: weakref.WeakSet[SQLiteLedger] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # Only the forking thread survives a fork: a lock another thread held is held forever in the child.
    for ledger in list(_LIVE):
        ledger._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class SQLiteLedger(Ledger):
    """A ledger in an SQLite file, shared by every process that opens it with the same ``key``.

    **Storage.** One file holds any number of keys (budgets). Every charge — and the creation of every
    key — appends one row to a journal: ``(seq, key, entry, hash)`` where ``seq`` counts 1, 2, 3, … over
    the whole file and ``hash`` = SHA-256 of the previous row's hash, ``seq``, the key and the entry, which
    holds a random nonce (the first row chains from a random per-file id). A key's current entry is its
    last row; a separate head row holds the last ``(seq, hash)``. Every few dozen charges, a charge
    *folds* the older rows: it appends a checkpoint row (every key's entry as of a row ``C``, and row
    ``C``'s hash), chained like any other row, and deletes rows ``1 … C``, keeping the last 32 rows before
    the checkpoint. The file therefore
    stays at a constant size (45–49 KB for a filter with one key: at most ~100 rows plus one entry per key)
    however many charges it records. Opening verifies the chain from the checkpoint; every transaction
    re-verifies the head and every row appended since (by any process), a fold verifies the whole journal
    again before it folds anything, and a ledger object refuses if the sequence it has seen ever goes
    backwards.

    **Durability.** Rollback journal (``journal_mode=TRUNCATE``) with ``synchronous=FULL``: when
    :meth:`charge` returns, the charge is in the main database file and fsynced; the ``-journal`` file only
    holds data *during* a transaction, so deleting it, or copying the ``.db`` alone, after a process was
    killed loses no charge that had returned (a torn in-flight transaction is either rolled back by SQLite
    or detected by the chain). Each charge is one ``BEGIN IMMEDIATE`` transaction, so processes and threads
    sharing the file are serialised and never overspend together.

    **Creation (``create=``).** A path that does not exist is created as a new ledger (atomically: the
    file is built under a temporary name and hard-linked into place, so no other process ever sees a
    half-made ledger). A file that exists is never initialised: an empty, truncated, foreign or corrupt
    file is a :class:`LedgerError`. In a ledger that holds a key, a key that has never existed is added
    only with ``create=True``; without it a missing key is an error, because it usually means a typo or
    a file that lost its data. A key that existed is never re-created: its history is in the chain, and
    a deleted row breaks the chain. Why a missing *path* needs no ``create=True``: nothing about a path
    that does not exist can be confused with a damaged ledger, and a whole deleted file cannot be
    detected from inside it anyway (see the threat model). A verified ledger file whose journal is still
    empty (sequence 0: no key was ever added to it) counts as new too, so that processes starting together
    on a new path all succeed, whichever of them creates the file and however late the others open it.

    **What is detected, what is not (threat model).** Detected: truncation, a deleted or edited row, a
    row copied back from an older state, a damaged, deleted or older checkpoint, a folded row put back, a
    flipped byte anywhere in the records, a foreign database, a file of another schema version (no silent
    migration), a sequence that goes backwards while a process has the ledger open (and a rewrite after
    the last row it verified, while that row is kept: once folded, only the sequence is compared). Not
    detected: the chain is unkeyed, so someone who can write the file and recomputes the hashes can
    rewrite history; and a whole-file rollback to an older *copy* (or deleting the file) cannot be seen
    from inside the file — only an external high-water mark can: pass ``anchor=`` (a second file, kept
    where the analyst cannot write, which records each ledger file's highest verified head and every path
    it was seen at), or record :meth:`head` somewhere the analyst cannot write and compare. With an
    anchor, every transaction (of a process that has had the file open all along, too) compares the file
    with the anchor's record before it commits and raises the record to the head it verified, and a
    charge raises it again after its commit: a file behind the record, rewritten after it (the nonces make
    every rewrite differ, even of the same charges), missing or replaced at a recorded path is refused.
    The first charge under an anchor stores the anchor's id in the file: an anchor without a record of an
    anchored file (deleted, emptied of rows, another one) is refused unless ``reanchor=True``. A fold
    happens in a transaction that has raised the anchor's record to the head, so an anchor's record is
    never among the rows its own processes fold; a record that a process *without* the anchor folded away
    cannot be checked, and is refused: every process writing an anchored file should pass the anchor. Keep
    the file where the analyst cannot write it.

    **Errors.** Every failure is a :class:`LedgerError` whose message says which: locked (the subclass
    :class:`LedgerLocked`; retry), read-only file or directory, disk full, corrupt, not a ledger, wrong
    schema version, bound to another budget. The filter then refuses to answer; it never starts at zero.

    **Readers.** With a rollback journal no charge commits while another connection holds a transaction
    open on the file: a reader that keeps one open (a database browser, a cursor not read to the end)
    makes every charge raise :class:`LedgerLocked` after ``timeout``. Read a ledger in use with
    :meth:`head` or the accountant's ``spent()`` (short, verified read transactions), or a :meth:`backup`
    copy. (WAL mode would let readers and writers overlap, but a returned charge would live in the ``-wal``
    file, lost if it is deleted or the ``.db`` is copied alone.)

    **Backups.** Use :meth:`backup` (SQLite's online backup API: a consistent copy while other processes
    use the file), or copy the ``.db`` file while no process has it open.

    Args:
        path: the file (``str`` or path-like). Created as a new ledger if it does not exist.
        key: which budget in the file this ledger is (a non-empty string; one file can hold many keys).
        create: allow adding ``key`` to an existing ledger file that has never had it.
        timeout: seconds to wait for another process's write lock (a finite real ≥ 0; at most about
            23 days are honoured).
        anchor: an optional second file (not the ledger itself) that records the highest head of every
            ledger file opened with it: a rolled-back, deleted or replaced ledger is then a
            :class:`LedgerError` (see the threat model). A missing anchor file is created; one that exists
            must be an anchor (an emptied or foreign file is a :class:`LedgerError`, never started afresh).
        reanchor: record a ledger file that an anchor recorded before in ``anchor``, which has no record
            of it (the anchor that recorded it was lost, or the file moves to another anchor). Without it
            that is a :class:`LedgerError`: a deleted anchor, created afresh, would let a rollback through.
            Pass it only once you know the file is not an older copy.

    Raises:
        InvalidParameter: ``path``, ``key``, ``create``, ``timeout``, ``anchor`` or ``reanchor`` of the
            wrong type or value.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "budget.db")
        >>> ledger = SQLiteLedger(path, "analyst-1")     # the path does not exist: a new ledger
        >>> ledger.bind("filter", "demo").queries
        0
        >>> ledger.close()
        >>> SQLiteLedger(path, "analyst-2").bind("filter", "demo")
        Traceback (most recent call last):
        ...
        dpcompose...LedgerError: ledger ... has no key 'analyst-2'...
        >>> with SQLiteLedger(path, "analyst-2", create=True) as other:
        ...     other.bind("filter", "demo").queries
        0
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        key: str,
        *,
        create: bool = False,
        timeout: float = 30.0,
        anchor: str | os.PathLike[str] | None = None,
        reanchor: bool = False,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
            raise InvalidParameter(f"path={path!r} must be a str or os.PathLike naming a file")
        fspath = os.fspath(path)
        if not fspath or "\x00" in fspath:
            raise InvalidParameter(f"path={path!r} must name a file")
        if not isinstance(key, str) or not key:
            raise InvalidParameter(f"key={key!r} must be a non-empty string")
        try:
            key_bytes = key.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidParameter(f"key={key!r} must be encodable as UTF-8") from exc
        if not isinstance(create, bool):
            raise InvalidParameter(f"create={create!r} must be True or False")
        if not isinstance(reanchor, bool):
            raise InvalidParameter(f"reanchor={reanchor!r} must be True or False")
        if reanchor and anchor is None:
            raise InvalidParameter("reanchor=True needs anchor= (the anchor to record the ledger in)")
        seconds = check_finite_nonnegative(timeout, "timeout")
        self._anchor: Anchor | None = None
        if anchor is not None:
            if not isinstance(anchor, (str, os.PathLike)) or not isinstance(os.fspath(anchor), str):
                raise InvalidParameter(f"anchor={anchor!r} must be a str or os.PathLike naming a file")
            anchor_path = os.path.realpath(os.fspath(anchor))
            if not anchor_path or "\x00" in anchor_path or anchor_path == os.path.realpath(fspath):
                raise InvalidParameter(f"anchor={anchor!r} must name a file other than the ledger")
            self._anchor = Anchor(anchor_path, float(min(seconds, _MAX_TIMEOUT)))
        self._reanchor = reanchor
        self._anchor_id: bytes | None = None  # the anchor's id, once read
        self._anchored_by: bytes | None = None  # the anchor id the file's head records (None: never anchored)
        self._head_v4 = True  # whether the file's head has the anchor column (version 4)
        self.path = fspath
        self._abspath = os.path.abspath(fspath)
        self.key = key
        self._key = key_bytes
        self._create = create
        self._timeout = float(min(seconds, _MAX_TIMEOUT))
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._conn: sqlite3.Connection | None = None
        self._finalizer: weakref.finalize[[], SQLiteLedger] | None = None
        self._inherited: list[sqlite3.Connection] = []
        self._created_file = False
        self._bound: tuple[str, str] | None = None
        # What this object has verified: the file's id, the head (seq, hash) and this key's last row.
        self._file_id: bytes | None = None
        self._seq = 0
        self._hash = b""
        self._entry: LedgerEntry | None = None
        self._pending: tuple[int, bytes, LedgerEntry | None] | None = None
        self._pending_fold: tuple[int, int] | None = None  # a fold's (checkpoint, keys) once it commits
        self._checked_conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] = (-1, -1)
        # The checkpoint's row and how many keys it held when this object last read it: when to fold next
        # (a fold verifies the whole journal again and decides from what it reads).
        self._checkpoint = 0
        self._keys = 0
        _LIVE.add(self)

    # -- errors ------------------------------------------------------------------------------------

    def _where(self) -> str:
        return f"ledger {self.path!r}"

    def _corrupt(self, why: str) -> LedgerError:
        return LedgerError(
            f"{self._where()} is corrupt or was tampered with ({why}). Refusing rather than starting from "
            "zero; nothing was run or spent. Restore it from a backup (see SQLiteLedger.backup)"
        )

    def _fail(self, exc: BaseException) -> LedgerError:
        """A LedgerError with the right diagnosis for an sqlite3 or OS error."""
        if isinstance(exc, UnicodeDecodeError):
            return self._corrupt(f"SQLite reported an error whose text is not UTF-8 ({exc})")
        text = str(exc)
        low = text.lower()
        primary = sqlite_primary(exc)
        os_errno = exc.errno if isinstance(exc, OSError) else None
        tail = "; nothing was run or spent"
        if is_locked(exc):
            return LedgerLocked(
                f"{self._where()} stayed locked by another process for {self._timeout} s ({text}): a "
                "process charging it, or a reader holding a transaction open on the file (a database "
                "browser, the sqlite3 shell inside BEGIN, a cursor not read to the end), which blocks every "
                f"charge{tail}. Retry later; read a ledger in use with SQLiteLedger.head() or the "
                "accountant's spent()/remaining(), or inspect a backup() copy"
            )
        if (
            primary == 8
            or os_errno in (errno.EROFS, errno.EACCES, errno.EPERM)
            or "readonly" in low
            or "read-only" in low
        ):
            return LedgerError(
                f"{self._where()} is read-only (the file, its directory or the file system: the ledger "
                f"needs to write the file and a '-journal' file beside it): {text}{tail}"
            )
        if primary == 13 or os_errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)) or "disk is full" in low:
            return LedgerError(f"{self._where()}: disk full (or quota exceeded): {text}{tail}")
        directory = os.path.dirname(os.path.abspath(self.path))
        if (primary == 14 or "unable to open" in low) and not os.access(directory, os.W_OK):
            return LedgerError(
                f"{self._where()}: its directory is read-only (or not writable by this user); the ledger "
                f"needs to create a '-journal' file beside the database ({text}){tail}"
            )
        if primary == 14 or "unable to open" in low:
            return LedgerError(
                f"{self._where()} cannot be opened ({text}): check that it exists and that it and its "
                f"directory are readable and writable{tail}"
            )
        if primary == 10 or isinstance(exc, OSError):
            return LedgerError(f"{self._where()}: I/O error ({type(exc).__name__}: {text}){tail}")
        if primary in (11, 26) or "malformed" in low or "not a database" in low:
            return self._corrupt(f"{type(exc).__name__}: {text}")
        return LedgerError(
            f"{self._where()} is unusable ({type(exc).__name__}: {text}); it may be corrupt or not a "
            f"dpcompose ledger. Refusing rather than starting from zero{tail}"
        )

    # -- connection ----------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._pid != os.getpid():
            # A connection must not be used across fork (SQLite's locks are per process): the child keeps
            # the inherited one unused and opens its own; the verified head stays valid knowledge.
            if self._conn is not None:
                self._inherited.append(self._conn)
                if self._finalizer is not None:
                    self._finalizer.detach()
            self._conn, self._finalizer = None, None
            self._pid = os.getpid()
        if self._conn is not None:
            return self._conn
        if not self._exists():
            if self._anchor is None or not self._anchor.look(self._paths()).at_paths:
                self._create_file()
            # The anchor records a ledger at this path. A process records a file only after linking it
            # into place, so a path still missing now, after that record was read, means the recorded file
            # was deleted or moved. One that exists now was created meanwhile by a process starting
            # together with this one: it is opened, and verified against the anchor like any other.
            elif not self._exists():
                raise LedgerError(
                    f"{self._where()} does not exist, but anchor {self._anchor.path!r} records a ledger at "
                    "this path: it was deleted or moved. Refusing to start a new budget there; restore the "
                    "file (or open it where it was moved to), or start a new budget at a new path"
                )
        uri = Path(os.path.abspath(self.path)).as_uri() + "?mode=rw"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=self._timeout, isolation_level=None,
                                   check_same_thread=False)  # fmt: skip
        except SQL_ERRORS as exc:
            raise self._fail(exc) from exc
        try:
            conn.text_factory = bytes  # a flipped byte must not surface as UnicodeDecodeError
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = TRUNCATE").fetchone()
            if mode is None or mode[0] not in (b"truncate", "truncate"):
                raise LedgerError(f"{self._where()}: could not use a rollback journal (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL")
        except SQL_ERRORS as exc:
            conn.close()
            raise self._fail(exc) from exc
        except BaseException:
            conn.close()
            raise
        try:
            st = os.stat(self.path)
        except OSError as exc:
            conn.close()
            raise self._fail(exc) from exc
        self._identity = (st.st_dev, st.st_ino)
        self._conn = conn
        # Close the connection when the ledger is garbage-collected; ``close()`` or ``with`` close it earlier.
        self._finalizer = weakref.finalize(self, conn.close)
        return conn

    def _exists(self) -> bool:
        try:
            os.stat(self.path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise self._fail(exc) from exc
        return True

    def _create_file(self) -> None:
        """Make a new, empty ledger at ``self.path`` atomically (build aside, then hard-link into place)."""
        try:
            create_file(self.path, build)  # False: another process created it first; use theirs
        except (*SQL_ERRORS, OSError) as exc:
            raise self._fail(exc) from exc
        # Whoever won the race, the path did not exist when this ledger looked: adding the key is allowed.
        self._created_file = True

    @contextlib.contextmanager
    def _transaction(self, immediate: bool) -> Iterator[sqlite3.Connection]:
        """A transaction on a verified ledger (the caller holds ``self._lock``)."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        except SQL_ERRORS as exc:
            raise self._fail(exc) from exc
        self._pending = self._pending_fold = None
        try:
            with committed(conn, self._fail):
                self._check_identity()
                self._verify(conn)
                yield conn
        finally:
            pending, self._pending = self._pending, None
            folded, self._pending_fold = self._pending_fold, None
        if folded is not None:  # committed: the fold's checkpoint is in the file
            self._checkpoint, self._keys = folded
        if pending is not None:  # committed: what this object appended is now verified state
            self._seq, self._hash, self._entry = pending
            if self._anchor is not None and self._file_id is not None:
                self._anchor.record(self._file_id, self._paths(), self._seq, self._hash)

    def _paths(self) -> list[str]:
        """The paths an anchor records this file at: as given (made absolute) and resolved."""
        return [self._abspath, os.path.realpath(self._abspath)]

    # -- verification --------------------------------------------------------------------------------

    def _check_identity(self) -> None:
        """The path still names the file this connection has open (not deleted, not replaced)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise self._corrupt("the file was deleted while in use") from None
        except OSError as exc:
            raise self._fail(exc) from exc
        if (st.st_dev, st.st_ino) != self._identity:
            raise self._corrupt("the file was replaced by another file while in use")

    def _verify(self, conn: sqlite3.Connection) -> None:
        with self._checking():
            if self._checked_conn is not conn:  # each new connection: header, schema and size first
                self._check_file(conn)
                self._checked_conn = conn
            self._check_chain(conn)
            file_id = self._file_id
            if self._anchor is not None and file_id is not None:
                # In this transaction (the head cannot move meanwhile): the file against its mark, the
                # mark raised to the head verified (what a charge commits is recorded after its commit).
                self._anchor_id = self._anchor.sync(
                    file_id,
                    self._paths(),
                    (self._seq, self._hash),
                    lambda seq: hash_at(conn, file_id, seq),
                    self._anchored_by,
                    self._reanchor,
                )

    @contextlib.contextmanager
    def _checking(self) -> Iterator[None]:
        """A failed check of the file's contents, raised as a LedgerError that says which."""
        try:
            yield
        except RolledBack as exc:
            raise LedgerError(
                f"{self._where()} was rolled back ({exc}). What was spent after that copy was made is not in "
                "the file, so no budget can be read from it (a backup older than the anchor's record is "
                "refused the same way); nothing was run or spent. Start a new budget at a new path"
            ) from None
        except Unanchored as exc:
            raise LedgerError(
                f"{self._where()} was recorded by an anchor, but {exc}: the anchor was deleted, emptied of "
                "its rows or replaced, or this is another anchor. Without its record a rollback of the file "
                "cannot be seen; refusing; nothing was run or spent. Restore the anchor, or pass the one "
                "that recorded it; pass reanchor=True only to record this file in this anchor deliberately "
                "(once you know the file is not an older copy)"
            ) from None
        except Unverifiable as exc:
            raise LedgerError(
                f"{self._where()} cannot be checked against its anchor ({exc}). It may have been rolled "
                "back and written again; refusing rather than trusting it; nothing was run or spent. Every "
                "process that writes a ledger file should pass it the same anchor. Restore a backup at least "
                "as new as the anchor's record, or start a new budget at a new path"
            ) from None
        except Corrupt as exc:
            raise self._corrupt(str(exc)) from None
        except (ValueError, TypeError, OverflowError, ArithmeticError, UnicodeError, KeyError) as exc:
            raise self._corrupt(f"{type(exc).__name__}: {exc}") from exc

    def _check_file(self, conn: sqlite3.Connection) -> None:
        """Checks made when this object first reads the file: header, schema, size."""
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        objects = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
        if app == 0 and version == 0 and not objects:
            raise LedgerError(
                f"{self._where()} exists but is an empty database (a truncated or emptied ledger?). A file "
                "that exists is never initialised as a new ledger; refusing rather than starting from zero. "
                "Restore it from a backup, or delete it to start a new budget deliberately"
            )
        if app != APPLICATION_ID:
            raise LedgerError(
                f"{self._where()} is an SQLite database but not a dpcompose ledger (application_id={app!r}, "
                f"{len(objects)} schema objects); refusing to use it"
            )
        if version not in VERSIONS_READ:
            raise LedgerError(
                f"{self._where()} has ledger schema version {version!r}; this dpcompose reads versions "
                f"{' and '.join(map(str, VERSIONS_READ))} only. Files are not migrated silently: finish with "
                "that budget under the dpcompose that wrote it, or start a new ledger file"
            )
        found = {}
        for kind, name, sql in objects:
            found[bytes(name) if isinstance(name, bytes) else name] = (kind, sql)
        schema = SCHEMA if version == SCHEMA_VERSION else SCHEMA_V3
        want = {name.encode(): (b"table", sql.encode()) for name, sql in schema.items()}
        if found != want:
            raise Corrupt(f"unexpected schema objects {sorted(map(repr, found))}")
        page_size = as_int(conn.execute("PRAGMA page_size").fetchone()[0], "page size")
        pages = as_int(conn.execute("PRAGMA page_count").fetchone()[0], "page count")
        size = os.stat(self.path).st_size
        if size != page_size * pages:
            raise Corrupt(f"the file has {size} bytes, its header says {pages} pages of {page_size}")

    def _check_chain(self, conn: sqlite3.Connection) -> None:
        """Verify the head and every row after the one this object last verified; track this key's entry."""
        heads = conn.execute(f"SELECT * FROM {HEAD}").fetchall()
        if len(heads) != 1 or heads[0][0] != 1 or len(heads[0]) not in (4, 5):
            raise Corrupt(f"{len(heads)} head rows")
        self._head_v4 = len(heads[0]) == 5
        anchored_by = heads[0][4] if self._head_v4 else None
        self._anchored_by = None if anchored_by is None else as_blob(anchored_by, "anchor id", 16)
        head_seq = as_int(heads[0][1], "head seq")
        head_hash = as_blob(heads[0][2], "head hash", 32)
        file_id = as_blob(heads[0][3], "file id", 16)
        if self._file_id is not None:
            if file_id != self._file_id:
                raise Corrupt("the file was replaced by another ledger while in use")
            if head_seq < self._seq:
                raise Corrupt(
                    f"the ledger went back from sequence {self._seq} to {head_seq} while in use (rolled "
                    "back or replaced by an older copy)"
                )
            if self._follow(conn, head_seq, head_hash):
                return
        self._check_all(conn, head_seq, head_hash, file_id)

    def _follow(self, conn: sqlite3.Connection, head_seq: int, head_hash: bytes) -> bool:
        """Verify the rows appended since this object's last verification (O(new rows)).

        Returns False, having changed nothing, if the row after the last one this object verified is gone:
        another process folded it into a checkpoint (or it was deleted: :meth:`_check_all` tells which).
        """
        seq, prev, entry, checkpoint = self._seq, self._hash, self._entry, self._checkpoint
        rows = conn.execute(f"SELECT seq, key, entry, hash FROM {JOURNAL} WHERE seq > ? ORDER BY seq", (seq,))
        for row_seq, key, raw, digest in rows:
            row_seq = as_int(row_seq, "row seq")
            if row_seq != seq + 1:
                if seq == self._seq:
                    return False
                raise Corrupt(f"journal row {seq + 1} is missing (next is {row_seq})")
            key, raw = as_blob(key, "key"), as_blob(raw, "entry")
            if link(prev, row_seq, key, raw) != as_blob(digest, "row hash", 32):
                raise Corrupt(f"journal row {row_seq} fails its chained checksum")
            seq, prev = row_seq, digest
            if key == self._key:
                new = decode_entry(raw)
                if not continues(entry, new):
                    raise Corrupt(f"journal row {row_seq} does not continue key {self.key!r}")
                entry = new
            elif not key:  # another process's fold: when to fold next
                checkpoint = row_seq
        if seq == self._seq < head_seq:
            return False
        if (seq, prev) != (head_seq, head_hash):
            raise Corrupt(f"the journal ends at sequence {seq} but the head says {head_seq}")
        if seq == self._seq and seq > 0:
            # Re-check the last row itself against the one before it (O(1)): a rewritten or removed last
            # row is seen even when no row was appended since. (A fold keeps at least KEEP_ROWS ≥ 2 rows, so
            # both are rows of the journal.)
            last = conn.execute(
                f"SELECT seq, key, entry, hash FROM {JOURNAL} WHERE seq >= ? ORDER BY seq", (seq - 1,)
            ).fetchall()
            if seq == 1:
                before = genesis(self._file_id or b"")
            else:
                before = as_blob(last[0][3], "row hash", 32) if last else b""
            tail = last[-1] if last else None
            if (
                tail is None
                or len(last) != (1 if seq == 1 else 2)
                or as_int(tail[0], "row seq") != seq
                or link(before, seq, as_blob(tail[1], "key"), as_blob(tail[2], "entry")) != prev
                or tail[3] != prev
            ):
                raise Corrupt(f"journal row {seq} no longer matches the head")
        self._seq, self._hash, self._entry, self._checkpoint = seq, prev, entry, checkpoint
        return True

    def _check_all(self, conn: sqlite3.Connection, head_seq: int, head_hash: bytes, file_id: bytes) -> None:
        """Verify the whole journal from its start: when this object first reads the file, and when the rows
        after the last one it verified were folded into a checkpoint by another process (then only its
        sequence can be compared with the file's; an anchor's record is compared after it, by
        :meth:`_verify`)."""
        seen = self._seq if self._file_id is not None else None
        w = walk(conn, file_id, self._key, [] if seen is None else [seen])
        if (w.seq, w.hash) != (head_seq, head_hash):
            raise Corrupt(f"the journal ends at sequence {w.seq} but the head says {head_seq}")
        if seen is not None and seen >= w.start and w.at.get(seen) != self._hash:
            raise Corrupt(f"journal row {seen} no longer matches the one this ledger verified")
        entry = w.entries.get(self._key)
        if not continues(self._entry, entry):
            raise Corrupt(f"key {self.key!r} no longer continues the entry this ledger verified")
        self._file_id, self._seq, self._hash, self._entry = file_id, w.seq, w.hash, entry
        self._checkpoint, self._keys = w.checkpoint, w.keys

    def _fold(self, conn: sqlite3.Connection) -> None:
        """Fold the journal into a new checkpoint, keeping the last KEEP_ROWS rows before it (in a charge's
        write transaction, the head verified). The whole journal is verified again first, so a row damaged
        since this object read it is refused, never folded in. The transaction's verification raised an
        anchor's record to the head, so that it never falls inside the folded rows."""
        file_id, head = self._file_id, self._seq
        with self._checking():
            if file_id is None:  # a charge follows a verification, which sets it
                raise Corrupt("the file was not verified before a fold")
            # Each row was checked against the one before when this object followed it: key=None.
            w = walk(conn, file_id, None, (head,), fold_at=fold_point(head))
            if (w.seq, w.hash) != (head, self._hash) or w.entries.get(self._key) != self._entry:
                raise Corrupt(f"journal row {head} no longer matches the one this ledger verified")
            self._checkpoint, self._keys = w.checkpoint, w.keys
            if w.folded is None or not self._fold_due():  # another process folded it meanwhile
                return
        digest = fold(conn, head, self._hash, w.folded)
        self._pending = (head + 1, digest, self._entry)
        self._pending_fold = (head + 1, len(w.folded.entries))

    def _fold_due(self) -> bool:
        return fold_due(self._seq, self._checkpoint, self._keys)

    # -- the Ledger interface ----------------------------------------------------------------------

    def _may_add_key(self) -> bool:
        """Whether this key may be added: asked for, this object made the file, or no key was ever added.

        The last case is the file another process has just created and not yet added its key to (its
        ``bind`` is a transaction after the file is linked into place): without it, a process opening a
        new path a moment after another would be refused or not depending on timing.
        """
        return self._create or self._created_file or self._seq == 0

    def bind(self, kind: str, spec: str) -> LedgerEntry:
        with self._lock:
            with self._transaction(immediate=False):
                current = self._entry
                allowed = self._may_add_key()
            if current is None:
                if not allowed:
                    raise self._no_key()
                with self._transaction(immediate=True) as conn:
                    current = self._entry
                    if current is None:
                        if not self._may_add_key():  # another key was added since the read: decide again
                            raise self._no_key()
                        current = LedgerEntry(kind, spec, "", (), 0)
                        self._append(conn, current)
            if (current.kind, current.spec) != (kind, spec):
                raise mismatch(current, kind, spec, f"{self._where()} key {self.key!r}")
            self._bound = (kind, spec)
            return current

    def _no_key(self) -> LedgerError:
        return LedgerError(
            f"{self._where()} has no key {self.key!r}: it was never created in this file. "
            "Pass create=True to start a new budget under this key (a key that existed and "
            "lost its rows would be reported as corrupt); nothing was run or spent"
        )

    def _append(self, conn: sqlite3.Connection, entry: LedgerEntry) -> None:
        # After the verified head, or after what this transaction appended (a fold's checkpoint).
        if not self._head_v4:  # the first row this dpcompose writes to a version 2 or 3 file
            upgrade(conn)
            self._head_v4 = True
        if self._anchored_by is None and self._anchor_id is not None:  # the first write under an anchor
            conn.execute(f"UPDATE {HEAD} SET anchor = ? WHERE id = 1", (self._anchor_id,))
            self._anchored_by = self._anchor_id
        seq, prev = (self._seq, self._hash) if self._pending is None else self._pending[:2]
        digest = append(conn, seq + 1, prev, self._key, encode_entry(entry))
        self._pending = (seq + 1, digest, entry)  # becomes verified state once the transaction commits

    def _bound_entry(self) -> LedgerEntry:
        if self._bound is None:
            raise LedgerError(f"{self._where()} key {self.key!r} is not bound to an accountant yet")
        current = self._entry
        if current is None:
            raise self._corrupt(f"key {self.key!r} has no rows although it was bound")
        if (current.kind, current.spec) != self._bound:
            raise mismatch(current, *self._bound, f"{self._where()} key {self.key!r}")
        return current

    def read(self) -> LedgerEntry:
        with self._lock, self._transaction(immediate=False):
            return self._bound_entry()

    def charge(self, update: Callable[[LedgerEntry], LedgerEntry]) -> LedgerEntry:
        with self._lock:
            with self._transaction(immediate=True) as conn:
                current = self._bound_entry()
                new = check_update(current, update(current))
                if self._fold_due():
                    self._fold(conn)
                self._append(conn, new)
            return new

    def head(self) -> tuple[int, str]:
        """The verified head of the whole file's chain: ``(sequence, SHA-256 hex)``.

        Record it outside the file (another host, an append-only log) after a session; a later
        :meth:`head` with a smaller sequence, or a different hash at the same sequence, means the file
        was rolled back or replaced — the one thing the chain cannot detect from inside the file.
        """
        with self._lock, self._transaction(immediate=False):
            return self._seq, self._hash.hex()

    def backup(self, dest: str | os.PathLike[str]) -> None:
        """Write a consistent copy of the whole ledger file to ``dest`` (which must not exist).

        Uses SQLite's online backup API under a read transaction, so other processes may keep charging;
        the copy holds every charge committed before it started. The copy is verified before it is put
        in place, and it is put in place atomically (never a half-written file at ``dest``).

        Raises:
            InvalidParameter: ``dest`` is not a path.
            LedgerError: ``dest`` exists, or the ledger or the copy fails verification.
        """
        if not isinstance(dest, (str, os.PathLike)) or not isinstance(os.fspath(dest), str):
            raise InvalidParameter(f"dest={dest!r} must be a str or os.PathLike naming a file")
        target = os.path.abspath(os.fspath(dest))
        if os.path.lexists(target):
            raise LedgerError(f"backup destination {target!r} exists; refusing to overwrite it")
        directory, name = os.path.split(target)
        tmp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(8)}.new")
        with self._lock:
            try:
                with self._transaction(immediate=False) as conn:
                    copy = sqlite3.connect(tmp, isolation_level=None)
                    try:
                        conn.backup(copy)
                    finally:
                        copy.close()
                expected = (self._seq, self._hash)
                fd = os.open(tmp, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                check = SQLiteLedger(tmp, self.key)
                try:
                    with check._lock, check._transaction(immediate=False):
                        got = (check._seq, check._hash)
                finally:
                    check.close()
                if got != expected:
                    raise self._corrupt("the backup copy does not match the ledger")
                try:
                    os.link(tmp, target)
                except FileExistsError as exc:
                    raise LedgerError(f"backup destination {target!r} exists; not overwritten") from exc
                fsync_dir(directory)
            except (*SQL_ERRORS, OSError) as exc:
                raise self._fail(exc) from exc
            finally:
                for leftover in (tmp, tmp + "-journal"):
                    with contextlib.suppress(OSError):
                        os.unlink(leftover)

    def close(self) -> None:
        """Close the connection (it is reopened on next use; the verified head is kept)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
                if self._finalizer is not None:
                    self._finalizer.detach()
            self._conn, self._finalizer = None, None

    def __enter__(self) -> SQLiteLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteLedger({self.path!r}, {self.key!r})"
