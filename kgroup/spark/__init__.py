"""kgroup.spark"""
