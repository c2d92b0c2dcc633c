// attnjit run --tile-map's picture: one character per tile, square cells of tiles when the map
// is larger than the screen, and what a cell of mixed classes shows.
#include "tile_map.hpp"

#include <catch2/catch.hpp>
#include <vector>

#include "attnjit/attnjit.h"

using attnjit::cli::draw_tile_map;

namespace {

constexpr unsigned char E = ATTNJIT_TILE_EMPTY, F = ATTNJIT_TILE_FULL, P = ATTNJIT_TILE_PARTIAL;

// A causal map of n x n tiles: partial on the diagonal, full below, empty above.
std::vector<unsigned char> causal(int n) {
  std::vector<unsigned char> map;
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) map.push_back(c == r ? P : c < r ? F : E);
  }
  return map;
}

}  // namespace

TEST_CASE("a tile map small enough is drawn one character per tile", "[cli]") {
  const auto picture = draw_tile_map(causal(3), 3, 3, 64);
  CHECK(picture.tiles_per_cell == 1);
  CHECK(picture.lines == std::vector<std::string>{"+..", "#+.", "##+"});
  // Rows and columns differ (q_len != kv_len): the picture keeps the map's shape.
  const std::vector<unsigned char> wide = {F, F, E, E, P, F, F, E};
  CHECK(draw_tile_map(wide, 2, 4, 64).lines == std::vector<std::string>{"##..", "+##."});
}

TEST_CASE("a large tile map is drawn in square cells of tiles", "[cli]") {
  // 8 x 8 tiles in at most 4 cells: 2 x 2 tiles per cell; a diagonal cell mixes partial, full
  // and empty tiles, so it is '+'; below it all full, above all empty.
  const auto picture = draw_tile_map(causal(8), 8, 8, 4);
  CHECK(picture.tiles_per_cell == 2);
  CHECK(picture.lines == std::vector<std::string>{"+...", "#+..", "##+.", "###+"});
  // A ragged last cell (5 tiles, 2 per cell) covers only the tiles that exist.
  const auto ragged = draw_tile_map(causal(5), 5, 5, 3);
  CHECK(ragged.tiles_per_cell == 2);
  CHECK(ragged.lines == std::vector<std::string>{"+..", "#+.", "##+"});
}
