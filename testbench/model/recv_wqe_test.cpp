// Receive WQE parsing (queues/recv_wqe.cpp): RQ strides with and without the MLX5_INVALID_LKEY
// terminator, SRQ next segments, malformed input.
#include "model/queues/recv_wqe.h"

#include <gtest/gtest.h>

#include "common/endian.h"

namespace hcaemu::model::test {
namespace {

void put_data(std::vector<uint8_t>& w, size_t at, uint32_t byte_count, uint32_t lkey, uint64_t addr) {
  store_be32(&w[at], byte_count);
  store_be32(&w[at + 4], lkey);
  store_be64(&w[at + 8], addr);
}

TEST(RecvWqe, FullStrideWithoutTerminator) {
  std::vector<uint8_t> w(64, 0);
  for (uint32_t i = 0; i < 4; ++i) put_data(w, 16 * i, 100 + i, 0x200 + i, 0x1000 * (i + 1));
  std::vector<Sge> sges;
  ASSERT_EQ(parse_recv_wqe(w, sges), WqeError::kNone);
  ASSERT_EQ(sges.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sges[i].length, 100 + i);
    EXPECT_EQ(sges[i].lkey, 0x200 + i);
    EXPECT_EQ(sges[i].addr, 0x1000u * (i + 1));
  }
}

TEST(RecvWqe, TerminatorEndsTheList) {
  std::vector<uint8_t> w(64, 0);
  put_data(w, 0, 256, 0x201, 0x1000);
  put_data(w, 16, 0, 0x100, 0);
  put_data(w, 32, 512, 0x201, 0x2000);  // after the terminator: not part of the list
  std::vector<Sge> sges{{1, 2, 3}};
  ASSERT_EQ(parse_recv_wqe(w, sges), WqeError::kNone);
  ASSERT_EQ(sges.size(), 1u);
  EXPECT_EQ(sges[0].length, 256u);

  put_data(w, 0, 0, 0x100, 0);
  ASSERT_EQ(parse_recv_wqe(w, sges), WqeError::kNone);
  EXPECT_TRUE(sges.empty());
}

TEST(RecvWqe, ByteCountZeroMeansTwoGigabytes) {
  std::vector<uint8_t> w(32, 0);
  put_data(w, 0, 0, 0x201, 0x1000);
  put_data(w, 16, 0, 0x100, 0);
  std::vector<Sge> sges;
  ASSERT_EQ(parse_recv_wqe(w, sges), WqeError::kNone);
  ASSERT_EQ(sges.size(), 1u);
  EXPECT_EQ(sges[0].length, 0x80000000u);
}

TEST(RecvWqe, MalformedInput) {
  std::vector<Sge> sges{{1, 2, 3}};
  EXPECT_EQ(parse_recv_wqe({}, sges), WqeError::kBadDs);
  EXPECT_TRUE(sges.empty());
  EXPECT_EQ(parse_recv_wqe(std::vector<uint8_t>(24, 0), sges), WqeError::kBadDs);
  std::vector<uint8_t> w(32, 0);
  put_data(w, 0, 0x80000010u, 0x201, 0x1000);  // inline marker: no such thing in an RQ
  EXPECT_EQ(parse_recv_wqe(w, sges), WqeError::kBadInline);
}

TEST(SrqWqe, NextSegmentThenDataSegments) {
  std::vector<uint8_t> w(64, 0);
  store_be16(&w[2], 0x1234);
  w[4] = 0x5a;  // signature byte: ignored
  put_data(w, 16, 128, 0x301, 0x8000);
  put_data(w, 32, 64, 0x302, 0x9000);
  put_data(w, 48, 0, 0x100, 0);
  uint16_t next = 0;
  std::vector<Sge> sges;
  ASSERT_EQ(parse_srq_wqe(w, next, sges), WqeError::kNone);
  EXPECT_EQ(next, 0x1234);
  ASSERT_EQ(sges.size(), 2u);
  EXPECT_EQ(sges[1].lkey, 0x302u);
  EXPECT_EQ(sges[1].addr, 0x9000u);
}

TEST(SrqWqe, SizesAtTheEdges) {
  uint16_t next = 0;
  std::vector<Sge> sges;
  std::vector<uint8_t> w(16, 0);
  store_be16(&w[2], 7);
  ASSERT_EQ(parse_srq_wqe(w, next, sges), WqeError::kNone);  // a stride of only the next segment
  EXPECT_EQ(next, 7);
  EXPECT_TRUE(sges.empty());
  EXPECT_EQ(parse_srq_wqe(std::vector<uint8_t>(15, 0), next, sges), WqeError::kBadDs);
  EXPECT_EQ(parse_srq_wqe(std::vector<uint8_t>(40, 0), next, sges), WqeError::kBadDs);
}

}  // namespace
}  // namespace hcaemu::model::test
