// SPDX-License-Identifier: Apache-2.0
// The image tables of runner.db: record, look up, untag, collect.
#include "image_db.hpp"

#include <sqlite3.h>

#include <exception>
#include <map>
#include <new>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>

#include "nps/store/store.hpp"

namespace nps::image::detail {

namespace {

// BEGIN IMMEDIATE … COMMIT for writes: the write lock is taken at BEGIN, so two
// processes recording images never deadlock upgrading a read lock (the
// busy timeout makes the second wait). Rolls back unless committed.
enum class TxnKind { read, write };

class Transaction {
public:
    explicit Transaction(SQLite::Database& db, TxnKind kind = TxnKind::write) : db_(db)
    {
        db_.exec(kind == TxnKind::write ? "BEGIN IMMEDIATE" : "BEGIN");
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    ~Transaction()
    {
        if (committed_ || sqlite3_get_autocommit(db_.getHandle()))
            return;
        try {
            db_.exec("ROLLBACK");
        } catch (...) {  // the connection reports any lasting failure on its next use
        }
    }
    void commit()
    {
        db_.exec("COMMIT");
        committed_ = true;
    }

private:
    SQLite::Database& db_;
    bool committed_ = false;
};

// Runs body(); an SQLite or allocation failure becomes an error naming the
// operation (`what`) and the database.
template <class T, class Body>
Result<T> guarded(const std::string& path, const char* what, Body&& body) noexcept
{
    const auto fail = [&](const char* why) {
        try {
            return internal_error(std::string("Failed to ") + what + " in '" + path + "': " + why);
        } catch (...) {
            return Error{};
        }
    };
    try {
        return body();
    } catch (const SQLite::Exception& e) {
        return fail(e.what());
    } catch (const std::bad_alloc&) {
        return fail("out of memory");
    } catch (const std::exception& e) {
        return fail(e.what());
    }
}

constexpr const char* kManifestColumns = "digest, media_type, size, platform, imported_at, last_used_at";

ManifestRecord read_manifest_row(const SQLite::Statement& st)
{
    ManifestRecord m;
    m.digest = st.getColumn(0).getString();
    m.media_type = st.getColumn(1).getString();
    m.size = st.getColumn(2).getInt64();
    m.platform = st.getColumn(3).getString();
    m.imported_at_ms = st.getColumn(4).getInt64();
    m.last_used_at_ms = st.getColumn(5).getInt64();
    return m;
}

// Fills config and layers from image_blobs.
void read_parts(SQLite::Database& db, ManifestRecord& m)
{
    SQLite::Statement st(db,
                         "SELECT position, digest, media_type, size, diff_id FROM image_blobs "
                         "WHERE manifest_digest = ?1 ORDER BY position");
    st.bind(1, m.digest);
    m.layers.clear();
    while (st.executeStep()) {
        if (st.getColumn(0).getInt() == 0) {
            m.config_digest = st.getColumn(1).getString();
            m.config_media_type = st.getColumn(2).getString();
            m.config_size = st.getColumn(3).getInt64();
            continue;
        }
        m.layers.push_back({.digest = st.getColumn(1).getString(),
                            .media_type = st.getColumn(2).getString(),
                            .size = st.getColumn(3).getInt64(),
                            .diff_id = st.getColumn(4).getString()});
    }
}

void insert_manifest(SQLite::Database& db, const ManifestRecord& m, std::int64_t now)
{
    SQLite::Statement exists(db, "SELECT 1 FROM image_manifests WHERE digest = ?1");
    exists.bind(1, m.digest);
    if (exists.executeStep())
        return;  // content-addressed: the same digest has the same parts
    SQLite::Statement st(db,
                         "INSERT INTO image_manifests (digest, media_type, size, platform, imported_at, last_used_at) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?5)");
    st.bind(1, m.digest);
    st.bind(2, m.media_type);
    st.bind(3, static_cast<std::int64_t>(m.size));
    st.bind(4, m.platform);
    st.bind(5, static_cast<std::int64_t>(now));
    st.exec();
    SQLite::Statement part(db,
                           "INSERT INTO image_blobs (manifest_digest, position, digest, media_type, size, diff_id) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    const auto add = [&](int position, const std::string& digest, const std::string& type, std::int64_t size,
                         const std::string* diff_id) {
        part.reset();
        part.bind(1, m.digest);
        part.bind(2, position);
        part.bind(3, digest);
        part.bind(4, type);
        part.bind(5, static_cast<std::int64_t>(size));
        if (diff_id)
            part.bind(6, *diff_id);
        else
            part.bind(6);
        part.exec();
    };
    add(0, m.config_digest, m.config_media_type, m.config_size, nullptr);
    int position = 1;
    for (const auto& layer : m.layers)
        add(position++, layer.digest, layer.media_type, layer.size, &layer.diff_id);
}

}  // namespace

ImageDb::ImageDb(std::unique_ptr<SQLite::Database> db, std::string path, const Clock& clock)
    : db_(std::move(db)), path_(std::move(path)), clock_(clock)
{
}

ImageDb::~ImageDb() = default;

Result<std::unique_ptr<ImageDb>> ImageDb::open(const std::string& path, const Clock& clock)
{
    {
        // Migrates (or refuses) the file exactly as the daemon does.
        auto store = NPS_TRY(store::Store::open({.path = path}, clock));
    }
    return guarded<std::unique_ptr<ImageDb>>(path, "open the image tables", [&]() -> Result<std::unique_ptr<ImageDb>> {
        auto db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE | SQLite::OPEN_NOMUTEX, 5000);
        db->exec("PRAGMA foreign_keys=ON");
        // Recorded images must survive power loss like deposits do.
        db->exec("PRAGMA synchronous=FULL");
        return std::unique_ptr<ImageDb>(new ImageDb(std::move(db), path, clock));
    });
}

Result<std::vector<std::optional<std::string>>> ImageDb::record(const std::vector<NamedManifest>& images)
{
    using Out = std::vector<std::optional<std::string>>;
    return guarded<Out>(path_, "record the imported images", [&]() -> Result<Out> {
        const std::int64_t now = clock_.now_ms();
        Out previous;
        Transaction txn(*db_);
        for (const auto& image : images) {
            insert_manifest(*db_, image.manifest, now);
            for (const auto& name : image.names) {
                SQLite::Statement old(*db_, "SELECT manifest_digest FROM image_refs WHERE name = ?1");
                old.bind(1, name);
                std::optional<std::string> was;
                if (old.executeStep() && old.getColumn(0).getString() != image.manifest.digest)
                    was = old.getColumn(0).getString();
                SQLite::Statement put(*db_,
                                      "INSERT INTO image_refs (name, manifest_digest, created_at, updated_at) "
                                      "VALUES (?1, ?2, ?3, ?3) ON CONFLICT (name) DO UPDATE SET "
                                      "manifest_digest = excluded.manifest_digest, updated_at = excluded.updated_at");
                put.bind(1, name);
                put.bind(2, image.manifest.digest);
                put.bind(3, static_cast<std::int64_t>(now));
                put.exec();
                previous.push_back(std::move(was));
            }
        }
        txn.commit();
        return previous;
    });
}

Result<std::optional<std::string>> ImageDb::ref(const std::string& name)
{
    using Out = std::optional<std::string>;
    return guarded<Out>(path_, "look up an image name", [&]() -> Result<Out> {
        SQLite::Statement st(*db_, "SELECT manifest_digest FROM image_refs WHERE name = ?1");
        st.bind(1, name);
        if (!st.executeStep())
            return Out{};
        return Out{st.getColumn(0).getString()};
    });
}

Result<std::vector<RefRow>> ImageDb::refs()
{
    return guarded<std::vector<RefRow>>(path_, "list the image names", [&]() -> Result<std::vector<RefRow>> {
        SQLite::Statement st(*db_,
                             "SELECT name, manifest_digest, created_at, updated_at FROM image_refs ORDER BY name");
        std::vector<RefRow> out;
        while (st.executeStep())
            out.push_back({st.getColumn(0).getString(), st.getColumn(1).getString(), st.getColumn(2).getInt64(),
                           st.getColumn(3).getInt64()});
        return out;
    });
}

Result<std::optional<ManifestRecord>> ImageDb::manifest(const std::string& digest)
{
    using Out = std::optional<ManifestRecord>;
    return guarded<Out>(path_, "read a manifest record", [&]() -> Result<Out> {
        SQLite::Statement st(*db_, std::string("SELECT ") + kManifestColumns + " FROM image_manifests WHERE digest = ?1");
        st.bind(1, digest);
        if (!st.executeStep())
            return Out{};
        ManifestRecord m = read_manifest_row(st);
        read_parts(*db_, m);
        return Out{std::move(m)};
    });
}

Result<std::vector<ManifestRecord>> ImageDb::manifests()
{
    using Out = std::vector<ManifestRecord>;
    return guarded<Out>(path_, "list the manifest records", [&]() -> Result<Out> {
        // One read transaction, so the parts match the rows.
        Transaction txn(*db_, TxnKind::read);
        SQLite::Statement st(*db_, std::string("SELECT ") + kManifestColumns + " FROM image_manifests ORDER BY digest");
        Out out;
        while (st.executeStep())
            out.push_back(read_manifest_row(st));
        for (auto& m : out)
            read_parts(*db_, m);
        txn.commit();
        return out;
    });
}

Result<std::vector<std::string>> ImageDb::manifests_with_prefix(const std::string& hex_prefix)
{
    using Out = std::vector<std::string>;
    return guarded<Out>(path_, "look up a manifest digest", [&]() -> Result<Out> {
        // The prefix is hex only (checked by the caller), so no LIKE escapes are needed.
        SQLite::Statement st(*db_, "SELECT digest FROM image_manifests WHERE substr(digest, 8, ?2) = ?1 ORDER BY digest");
        st.bind(1, hex_prefix);
        st.bind(2, static_cast<std::int64_t>(hex_prefix.size()));
        Out out;
        while (st.executeStep())
            out.push_back(st.getColumn(0).getString());
        return out;
    });
}

Result<void> ImageDb::touch(const std::string& digest)
{
    return guarded<void>(path_, "record an image's use", [&]() -> Result<void> {
        // At most once per kUseTimeResolutionMs: a row left unchanged costs
        // no write (every worker start pins its image, and each write here
        // would be an fsync of images.db on the worker's way to start).
        SQLite::Statement st(*db_, "UPDATE image_manifests SET last_used_at = ?2 WHERE digest = ?1 AND "
                                   "last_used_at <= ?2 - ?3");
        st.bind(1, digest);
        st.bind(2, static_cast<std::int64_t>(clock_.now_ms()));
        st.bind(3, kUseTimeResolutionMs);
        st.exec();
        return {};
    });
}

Result<std::set<std::string>> ImageDb::remove_refs(const std::vector<std::string>& names)
{
    using Out = std::set<std::string>;
    return guarded<Out>(path_, "remove image names", [&]() -> Result<Out> {
        Out manifests;
        Transaction txn(*db_);
        for (const auto& name : names) {
            SQLite::Statement st(*db_, "DELETE FROM image_refs WHERE name = ?1 RETURNING manifest_digest");
            st.bind(1, name);
            while (st.executeStep())
                manifests.insert(st.getColumn(0).getString());
        }
        txn.commit();
        return manifests;
    });
}

Result<Collection> ImageDb::collect(const std::optional<std::set<std::string>>& candidates,
                                    const std::set<std::string>& pinned)
{
    return guarded<Collection>(path_, "collect unreferenced images", [&]() -> Result<Collection> {
        Collection out;
        Transaction txn(*db_);
        {
            SQLite::Statement unreferenced(
                *db_,
                "SELECT digest FROM image_manifests m WHERE NOT EXISTS "
                "(SELECT 1 FROM image_refs r WHERE r.manifest_digest = m.digest) ORDER BY digest");
            std::vector<std::string> doomed;
            while (unreferenced.executeStep()) {
                std::string digest = unreferenced.getColumn(0).getString();
                if (pinned.count(digest) || (candidates && !candidates->count(digest)))
                    continue;
                doomed.push_back(std::move(digest));
            }
            SQLite::Statement del(*db_, "DELETE FROM image_manifests WHERE digest = ?1");
            for (const auto& digest : doomed) {
                del.reset();
                del.bind(1, digest);
                del.exec();
            }
            out.removed_manifests = std::move(doomed);
        }
        SQLite::Statement live(*db_,
                               "SELECT digest, diff_id FROM image_blobs UNION ALL SELECT digest, NULL FROM image_manifests");
        while (live.executeStep()) {
            out.live_blobs.insert(live.getColumn(0).getString());
            if (!live.isColumnNull(1))
                out.live_diff_ids.insert(live.getColumn(1).getString());
        }
        txn.commit();
        return out;
    });
}

Result<std::vector<BlobRow>> ImageDb::blobs()
{
    using Out = std::vector<BlobRow>;
    return guarded<Out>(path_, "list the recorded blobs", [&]() -> Result<Out> {
        std::map<std::string, BlobRow> rows;
        std::map<std::string, std::int64_t> names_per_manifest;
        Transaction txn(*db_, TxnKind::read);
        {
            SQLite::Statement st(*db_, "SELECT manifest_digest, count(*) FROM image_refs GROUP BY manifest_digest");
            while (st.executeStep())
                names_per_manifest[st.getColumn(0).getString()] = st.getColumn(1).getInt64();
        }
        const auto add = [&](const std::string& digest, const char* kind, std::int64_t size,
                             const std::string& manifest, std::optional<std::string> diff_id) {
            BlobRow& row = rows[digest];
            row.digest = digest;
            row.kind = kind;
            row.size = size;
            if (diff_id)
                row.diff_id = std::move(diff_id);
            if (row.manifests.insert(manifest).second) {
                auto it = names_per_manifest.find(manifest);
                row.refs += it == names_per_manifest.end() ? 0 : it->second;
            }
        };
        {
            SQLite::Statement st(*db_, "SELECT digest, size FROM image_manifests");
            while (st.executeStep())
                add(st.getColumn(0).getString(), "manifest", st.getColumn(1).getInt64(), st.getColumn(0).getString(),
                    std::nullopt);
        }
        {
            SQLite::Statement st(*db_, "SELECT manifest_digest, position, digest, size, diff_id FROM image_blobs");
            while (st.executeStep()) {
                const bool layer = st.getColumn(1).getInt() != 0;
                add(st.getColumn(2).getString(), layer ? "layer" : "config", st.getColumn(3).getInt64(),
                    st.getColumn(0).getString(),
                    layer ? std::optional<std::string>(st.getColumn(4).getString()) : std::nullopt);
            }
        }
        txn.commit();
        Out out;
        for (auto& [_, row] : rows)
            out.push_back(std::move(row));
        return out;
    });
}

}  // namespace nps::image::detail
